package jsonschema

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// format is a format Nova asserts. check sees strings only: a format says
// nothing about other types, which "type" is there to refuse.
type format struct {
	name  string
	check func(string) error
}

// formats are the formats the schemas use. Their rules, and the words of
// their errors, are those of the validator Nova used before, so that a
// contract accepted or refused yesterday is accepted or refused today
// with the same explanation.
var formats = map[string]*format{
	"uuid":      {"uuid", CheckUUID},
	"date-time": {"date-time", checkDateTime},
	"uri":       {"uri", checkURI},
}

// CheckUUID accepts the 8-4-4-4-12 hex form of RFC 4122, in either case,
// whatever its version: the "uuid" format, for code that must agree with
// the schema on what an id is.
func CheckUUID(s string) error {
	lengths := []int{8, 4, 4, 4, 12}
	groups := strings.Split(s, "-")
	if len(groups) != len(lengths) {
		return fmt.Errorf("must have %d elements", len(lengths))
	}
	for i, g := range groups {
		if len(g) != lengths[i] {
			return fmt.Errorf("element %d must be %d characters long", i+1, lengths[i])
		}
		for _, r := range g {
			if !isHex(r) {
				return fmt.Errorf("non-hex character %q", r)
			}
		}
	}
	return nil
}

func isHex(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// checkDateTime accepts RFC 3339's date-time, leap seconds included
// (time.Parse refuses those, so the time is read by hand).
func checkDateTime(s string) error {
	if len(s) < len("2006-01-02T15:04:05Z") {
		return errors.New("less than 20 characters long")
	}
	if s[10] != 'T' && s[10] != 't' {
		return errors.New("11th character must be t or T")
	}
	if _, err := time.Parse(time.DateOnly, s[:10]); err != nil {
		return fmt.Errorf("invalid date element: %v", err)
	}
	if err := checkTime(s[11:]); err != nil {
		return fmt.Errorf("invalid time element: %v", err)
	}
	return nil
}

// checkTime reads RFC 3339's full-time: hh:mm:ss, an optional fraction,
// then Z or an offset.
func checkTime(s string) error {
	if len(s) < len("15:04:05Z") {
		return errors.New("less than 9 characters long")
	}
	if s[2] != ':' || s[5] != ':' {
		return errors.New("missing colon in correct place")
	}
	var hms [3]int
	for i, part := range strings.SplitN(s[:8], ":", 3) {
		n, err := strconv.Atoi(part)
		switch {
		case err != nil:
			return errors.New("invalid hour/min/sec")
		case n < 0:
			return errors.New("non-positive hour/min/sec")
		}
		hms[i] = n
	}
	h, m, sec := hms[0], hms[1], hms[2]
	if h > 23 || m > 59 || sec > 60 {
		return errors.New("hour/min/sec out of range")
	}
	rest := s[8:]
	if frac, ok := strings.CutPrefix(rest, "."); ok {
		n := len(frac) - len(strings.TrimLeft(frac, "0123456789"))
		if n == 0 {
			return errors.New("no digits in second fraction")
		}
		rest = frac[n:]
	}
	if rest != "Z" && rest != "z" {
		// A leap second is 23:59:60 in UTC, so the offset is applied
		// before checking one.
		offset, err := checkOffset(rest)
		if err != nil {
			return err
		}
		minutes := (h*60 + m - offset + 24*60) % (24 * 60)
		h, m = minutes/60, minutes%60
	}
	if sec == 60 && (h != 23 || m != 59) {
		return errors.New("invalid leap second")
	}
	return nil
}

// checkOffset reads +hh:mm or -hh:mm and returns it in minutes east of UTC.
func checkOffset(s string) (int, error) {
	if len(s) != len("+01:00") {
		return 0, errors.New("offset must be 6 characters long")
	}
	sign := 1
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, errors.New("offset must begin with plus/minus")
	}
	if s[3] != ':' {
		return 0, errors.New("missing colon in offset in correct place")
	}
	var hm [2]int
	for i, part := range strings.SplitN(s[1:], ":", 2) {
		n, err := strconv.Atoi(part)
		switch {
		case err != nil:
			return 0, errors.New("invalid hour/min in offset")
		case n < 0:
			return 0, errors.New("non-positive hour/min in offset")
		}
		hm[i] = n
	}
	if hm[0] > 23 || hm[1] > 59 {
		return 0, errors.New("hour/min in offset out of range")
	}
	return sign * (hm[0]*60 + hm[1]), nil
}

// checkURI accepts an absolute URL as net/url parses it, with an IPv6 host
// checked as one (net/url leaves that to the dialer).
func checkURI(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if host := u.Hostname(); strings.Contains(host, ":") {
		if !strings.Contains(u.Host, "[") || !strings.Contains(u.Host, "]") {
			return errors.New("ipv6 address not enclosed in brackets")
		}
		if err := checkIPv6(host); err != nil {
			return fmt.Errorf("invalid ipv6 address: %v", err)
		}
	}
	if !u.IsAbs() {
		return errors.New("relative url")
	}
	return nil
}

func checkIPv6(s string) error {
	addr, err := netip.ParseAddr(s)
	switch {
	case err != nil:
		return err
	case addr.Zone() != "":
		return errors.New("zone id is not a part of ipv6 address")
	}
	return nil
}
