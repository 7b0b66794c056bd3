package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// bgRace is a contract with a breakglass group and a local evidence repo
// that break-glass commands share, run in this process.
type bgRace struct {
	t     *testing.T
	dir   string
	home  string
	clock time.Time
}

func newBGRace(t *testing.T) *bgRace {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	writeFile(t, filepath.Join(dir, runner.ApproversFile), testApprovers+"  breakglass:\n    members: [sre-1, sre-2, bg-3]\n")
	signedCheckout(t, dir)
	return &bgRace{t: t, dir: dir, home: t.TempDir(), clock: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)}
}

// nova runs one command; pause, when set, is its Env.Pause.
func (r *bgRace) nova(pause func(string), wantCode int, args ...string) string {
	r.t.Helper()
	var stdout, stderr bytes.Buffer
	if args[0] == "break-glass" {
		args = append(args, "--dir", r.dir)
	}
	code := exitCode(run(r.t.Context(), Env{Args: args, Getenv: func(k string) string { return map[string]string{"HOME": r.home, "USER": "oncall"}[k] },
		Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return r.clock }, Pause: pause}))
	if code != wantCode {
		r.t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

func (r *bgRace) request() string {
	r.t.Helper()
	out := r.nova(nil, ExitPass, "break-glass", "request", "--env", "prod", "--reason", "db down")
	return regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(out)[1]
}

// approve approves req as who; at the pause point, it runs meanwhile
// (once) before going on.
func (r *bgRace) approve(req, who, at string, meanwhile func()) string {
	r.t.Helper()
	pause := func(point string) {
		if point == at && meanwhile != nil {
			m := meanwhile
			meanwhile = nil
			m()
		}
	}
	return r.nova(pause, ExitPass, "break-glass", "approve", "--env", "prod", "--request", req, "--as", who)
}

// grants are the grant events recorded, and the export's break_glass
// rows: who the one grant names, and the grant event it names.
func (r *bgRace) grants() (events []string, rows []map[string]any) {
	r.t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(r.nova(nil, ExitPass, "evidence", "query", "--type", runner.EventBreakGlassGranted, "--output", "jsonl")), "\n") {
		if line == "" {
			continue
		}
		var e struct {
			ID string `json:"event_id"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.ID == "" {
			r.t.Fatalf("query line %q: %v", line, err)
		}
		events = append(events, e.ID)
	}
	out := r.t.TempDir()
	r.nova(nil, ExitPass, "evidence", "export", "--out", out)
	rows = readJSONL(r.t, filepath.Join(out, "break_glass.jsonl"))
	return events, rows
}

// TestBreakGlassGrantIsUniquePerRequest drives the race of two approvals
// of one request at the same moment, step by step: one run is held at the
// point where the race bites while the other runs to the end.
func TestBreakGlassGrantIsUniquePerRequest(t *testing.T) {
	t.Run("two second approvals read the chain before either records", func(t *testing.T) {
		r := newBGRace(t)
		req := r.request()
		r.approve(req, "sre-1", "", nil)
		// sre-2 decided on sre-1's approval alone; bg-3 approves and grants
		// before sre-2 records: sre-2's approval must not grant again.
		out := r.approve(req, "sre-2", pauseApprovalDecided, func() {
			if out := r.approve(req, "bg-3", "", nil); !strings.Contains(out, "BREAK-GLASS GRANTED") {
				t.Fatalf("bg-3's approval did not grant:\n%s", out)
			}
		})
		if strings.Contains(out, "GRANTED") || !strings.Contains(out, "granted already") {
			t.Errorf("sre-2's approval after bg-3's grant says:\n%s", out)
		}
		events, rows := r.grants()
		if len(events) != 1 || len(rows) != 1 || rows[0]["grant_event_id"] != events[0] || rows[0]["approvers"] != "sre-1;bg-3" {
			t.Fatalf("grants %v, rows %v: want one grant by sre-1 and bg-3", events, rows)
		}
	})
	t.Run("both record a grant: the first in the chain is the grant", func(t *testing.T) {
		r := newBGRace(t)
		req := r.request()
		r.approve(req, "sre-1", "", nil)
		var first string
		r.approve(req, "sre-2", pauseBeforeGrant, func() {
			// bg-3 reads sre-1's and sre-2's approvals and grants first.
			out := r.approve(req, "bg-3", "", nil)
			first = regexp.MustCompile(`grant ([0-9a-f-]{36})`).FindStringSubmatch(out)[1]
		})
		events, rows := r.grants()
		if len(events) != 2 {
			t.Fatalf("grant events %v: the race was not driven (want both runs to record one)", events)
		}
		if len(rows) != 1 || rows[0]["grant_event_id"] != first || rows[0]["approvers"] != "sre-1;sre-2" {
			t.Fatalf("rows %v: want one grant, %s (the first recorded)", rows, first)
		}
		// The duplicate is not a second grant to revoke or use: revoking
		// the request ends the only one.
		r.nova(nil, ExitPass, "break-glass", "revoke", "--env", "prod", "--as", "oncall", "--reason", "db is back")
		r.nova(nil, ExitError, "break-glass", "revoke", "--env", "prod", "--as", "oncall", "--reason", "no grant holds")
	})
	t.Run("the first two approvals at once still grant", func(t *testing.T) {
		r := newBGRace(t)
		req := r.request()
		// Each decided on no approval at all: the second to record grants.
		out := r.approve(req, "sre-1", pauseApprovalDecided, func() {
			if out := r.approve(req, "sre-2", "", nil); strings.Contains(out, "GRANTED") {
				t.Fatalf("one approval granted:\n%s", out)
			}
		})
		if !strings.Contains(out, "BREAK-GLASS GRANTED") {
			t.Errorf("the second approval recorded did not grant:\n%s", out)
		}
		if events, rows := r.grants(); len(events) != 1 || len(rows) != 1 || rows[0]["approvers"] != "sre-2;sre-1" {
			t.Fatalf("grants %v, rows %v", events, rows)
		}
	})
}
