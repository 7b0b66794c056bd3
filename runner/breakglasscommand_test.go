package runner

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseBreakGlassCommand(t *testing.T) {
	for _, tc := range []struct {
		body    string
		ok      bool
		want    BreakGlassCommand
		problem bool
	}{
		{body: "/nova break-glass approve 1b2c", ok: true, want: BreakGlassCommand{Action: "approve", ID: "1b2c"}},
		{body: "\n  /nova Break-Glass APPROVE 1b2c\nthanks", ok: true, want: BreakGlassCommand{Action: "approve", ID: "1b2c"}},
		{body: "/nova break-glass revoke 1b2c db is back\nsee PIR-3", ok: true, want: BreakGlassCommand{Action: "revoke", ID: "1b2c", Reason: "db is back\nsee PIR-3"}},
		{body: "/nova break-glass revoke 1b2c", ok: true, problem: true},
		{body: "/nova break-glass approve 1b2c and more", ok: true, problem: true},
		{body: "/nova break-glass request prod", ok: true, problem: true},
		{body: "/nova break-glass", ok: true, problem: true},
		{body: "> /nova break-glass approve 1b2c"},
		{body: "`/nova break-glass approve 1b2c`"},
		{body: "/nova approve prod 0123456789abcdef0123456789abcdef"},
		{body: "lgtm\n/nova break-glass approve 1b2c"},
	} {
		got, ok := ParseBreakGlassCommand(tc.body)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.body, ok, tc.ok)
			continue
		}
		if tc.problem {
			if got.Problem == "" {
				t.Errorf("%q: no problem reported: %+v", tc.body, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.body, got, tc.want)
		}
	}
}

// TestBreakGlassCommentIsNoPlanClaim: a /nova break-glass comment on a
// pull request is neither an approval nor an unknown command there.
func TestBreakGlassCommentIsNoPlanClaim(t *testing.T) {
	if cmd, ok := ParseCommand("/nova break-glass approve 1b2c"); ok {
		t.Errorf("read as a plan command: %+v", cmd)
	}
}

func TestBreakGlassCommentProblem(t *testing.T) {
	cmd := BreakGlassCommand{Action: "approve", ID: "1b2c"}
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	if r, _ := BreakGlassCommentProblem(PostedComment{Poster: "sre-1", Ref: "9", Created: at}, cmd); r != "" {
		t.Errorf("a comment as posted refused: %s", r)
	}
	if r, msg := BreakGlassCommentProblem(PostedComment{Poster: "sre-1", Ref: "9", Created: at, Edited: true}, cmd); r != BreakGlassCommentEdited || msg == "" {
		t.Errorf("an edited comment: %q %q", r, msg)
	}
	if r, _ := BreakGlassCommentProblem(PostedComment{Poster: "sre-1"}, BreakGlassCommand{Problem: "incomplete"}); r != ConfigInvalid {
		t.Errorf("a command that cannot be acted on: %q", r)
	}
}

// TestBreakGlassFoldKeepsOneGrant: of two grants of one request (two
// second approvals at one moment) the first in the chain is the grant,
// and one person's two approvals are one.
func TestBreakGlassFoldKeepsOneGrant(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	var events []Event
	add := func(id, typ string, data any) {
		raw, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, Event{ID: id, Type: typ, ContractID: "c", Environment: string(Prod), Time: at, Data: raw})
	}
	add("req", EventBreakGlassRequested, BreakGlassRequest{Environment: Prod, Requester: "oncall", Reason: "down"})
	add("a1", EventBreakGlassApproved, BreakGlassApproval{Environment: Prod, Request: "req", Approver: "sre-1"})
	add("a1b", EventBreakGlassApproved, BreakGlassApproval{Environment: Prod, Request: "req", Approver: "SRE-1"})
	add("a0", EventBreakGlassApproved, BreakGlassApproval{Environment: Prod, Request: "req", Approver: "oncall"})
	sum := SummarizeGate(events)
	b := sum.BreakGlass["req"]
	if len(b.Approvals) != 1 || b.DueGrant(at, time.Hour) != nil {
		t.Fatalf("approvals %+v: one person's two and the requester's must count once, and grant nothing", b.Approvals)
	}
	add("a2", EventBreakGlassApproved, BreakGlassApproval{Environment: Prod, Request: "req", Approver: "sre-2"})
	add("a3", EventBreakGlassApproved, BreakGlassApproval{Environment: Prod, Request: "req", Approver: "bg-3"})
	due := SummarizeGate(events).BreakGlass["req"].DueGrant(at, time.Hour)
	if due == nil || due.Approvers[0] != "sre-1" || due.Approvers[1] != "sre-2" || due.Approvals[1] != "a2" {
		t.Fatalf("due grant %+v, want sre-1 and sre-2's", due)
	}
	add("g1", EventBreakGlassGranted, BreakGlassGrant{Environment: Prod, Request: "req", Approvers: []string{"sre-1", "sre-2"}, GrantedAt: at, ExpiresAt: at.Add(time.Hour)})
	add("g2", EventBreakGlassGranted, BreakGlassGrant{Environment: Prod, Request: "req", Approvers: []string{"sre-1", "bg-3"}, GrantedAt: at, ExpiresAt: at.Add(3 * time.Hour)})
	b = SummarizeGate(events).BreakGlass["req"]
	if b.Grant != "g1" || !b.ExpiresAt.Equal(at.Add(time.Hour)) || len(b.DuplicateGrants) != 1 || b.DuplicateGrants[0] != "g2" || b.DueGrant(at, time.Hour) != nil {
		t.Fatalf("grant %s until %s, duplicates %v: want g1 alone", b.Grant, b.ExpiresAt, b.DuplicateGrants)
	}
}
