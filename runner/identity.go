package runner

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Login is a person as the gate knows them: a forge login, or the name a
// local approver signs as. Both forges treat logins case-insensitively
// (GitHub's "SRE-Oncall" is "sre-oncall"), so a name compared as typed
// lets one person count as two: approve qa as qa-lead and prod as QA-LEAD,
// or sign with a fresh key as SRE-ONCALL where sre-oncall has a registered
// one. Every comparison the gate makes (membership, authorship, separation
// of duties, key lookup) is between Logins, and a Login exists only in
// canonical form: ASCII letters, digits, '.', '_' and '-', lower-cased.
// Anything else is refused rather than guessed at: a Unicode look-alike
// ("ѕre-oncall" with a Cyrillic s) must not pass for anyone.
type Login string

var loginPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`) })

// ParseLogin returns s's canonical form, or an error when s is not a login.
func ParseLogin(s string) (Login, error) {
	if !loginPattern().MatchString(s) {
		return "", fmt.Errorf("%q is not a login (ASCII letters, digits, '.', '_' and '-', at most 100)", s)
	}
	return Login(strings.ToLower(s)), nil
}

// LoginOf is ParseLogin for names already recorded (evidence written
// before logins were canonical): a valid one is canonicalised, anything
// else is kept lower-cased so it still compares equal to itself and to
// nobody else.
func LoginOf(s string) Login {
	if l, err := ParseLogin(s); err == nil {
		return l
	}
	return Login(strings.ToLower(s))
}
