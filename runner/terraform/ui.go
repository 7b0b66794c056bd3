package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// ui reads terraform's machine-readable UI (`-json`): every message goes to
// the run's log as the line a person would have seen, and error
// diagnostics are kept, so a failure is explained — and classified — from
// terraform's own structured diagnostic, never from parsing its prose.
type ui struct {
	mu      sync.Mutex
	log     io.Writer
	partial []byte
	errors  []diagnostic
}

// diagnostic is the part of a machine-readable diagnostic Nova reads.
type diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
}

type uiMessage struct {
	Message    string      `json:"@message"`
	Type       string      `json:"type"`
	Diagnostic *diagnostic `json:"diagnostic"`
}

func newUI(log io.Writer) *ui {
	if log == nil {
		log = io.Discard
	}
	return &ui{log: log}
}

func (u *ui) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.partial = append(u.partial, p...)
	for {
		i := bytes.IndexByte(u.partial, '\n')
		if i < 0 {
			break
		}
		u.line(u.partial[:i])
		u.partial = u.partial[i+1:]
	}
	return len(p), nil
}

func (u *ui) line(b []byte) {
	var m uiMessage
	if json.Unmarshal(b, &m) != nil {
		// Not a UI message (an older terraform, a provider's raw output):
		// keep it as it was written.
		fmt.Fprintf(u.log, "%s\n", b)
		return
	}
	fmt.Fprintln(u.log, m.Message)
	if m.Type == "diagnostic" && m.Diagnostic != nil && m.Diagnostic.Severity == "error" {
		u.errors = append(u.errors, *m.Diagnostic)
		if m.Diagnostic.Detail != "" {
			fmt.Fprintln(u.log, m.Diagnostic.Detail)
		}
	}
}

// classified is the reason and explanation of the first error diagnostic
// terraform reported, or ok false when it reported none.
func (u *ui) classified(backend, program string) (runner.Reason, string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.errors) == 0 {
		return "", "", false
	}
	d := u.errors[0]
	msg := d.Summary
	if d.Detail != "" {
		msg += ": " + tail(strings.TrimSpace(d.Detail), 12)
	}
	for _, c := range diagnosticReasons {
		if strings.Contains(d.Summary, c.summary) {
			if c.reason == runner.StateLocked {
				msg = lockMessage(d, backend, program)
			}
			return c.reason, msg, true
		}
	}
	return "", msg, true
}

// diagnosticReasons maps terraform's diagnostic summaries (stable strings
// of its backends and commands) to Nova's reasons, where a caller can do
// something specific about them.
var diagnosticReasons = []struct {
	summary string
	reason  runner.Reason
}{
	{"Error acquiring the state lock", runner.StateLocked},
	{"Saved plan is stale", runner.PlanStale},
	{"Backend initialization required", runner.BackendConfigInvalid},
	{"Invalid backend configuration", runner.BackendConfigInvalid},
	{"Backend configuration changed", runner.BackendConfigInvalid},
}

var (
	lockField     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*(ID|Who|Operation|Created):\s*(.+)$`) })
	lockErrorLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Error message:\s*(.+)$`) })
)

// lockMessage names who holds the state lock, from the lock info terraform
// prints in the diagnostic's detail. The pg backend's lock info is the
// asking run's own (advisory locks carry no data), so for it only the
// error is repeated: Nova's run lock names Nova holders before terraform
// is asked, and anyone else is a terraform run outside Nova.
func lockMessage(d diagnostic, backend, program string) string {
	if backend == "pg" {
		reason := "the state is locked"
		if m := lockErrorLine().FindStringSubmatch(d.Detail); m != nil {
			reason = strings.TrimSpace(m[1])
		}
		if strings.Contains(reason, "workspace creation") {
			return "another run is creating its state in this database and did not finish within the lock timeout (" + reason + "); the pg backend creates one workspace at a time, database-wide"
		}
		return "the state is locked by a " + program + " run outside Nova (" + reason + "); the pg backend does not record who holds its lock: look for " + program + " sessions in the database's pg_stat_activity"
	}
	info := map[string]string{}
	for _, m := range lockField().FindAllStringSubmatch(d.Detail, -1) {
		info[m[1]] = strings.TrimSpace(m[2])
	}
	if info["Who"] == "" {
		return "the state is locked by another run: " + tail(strings.TrimSpace(d.Detail), 12)
	}
	return fmt.Sprintf("the state is locked by %s (operation %s, since %s, lock id %s); it is released when that run ends, or with `%s force-unlock %s` once you are sure it is dead",
		info["Who"], orUnknown(info["Operation"]), orUnknown(info["Created"]), orUnknown(info["ID"]), program, orUnknown(info["ID"]))
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
