package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testDigest is sha256("test"): its prefixes hold letters.
const testDigest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestParseCommand(t *testing.T) {
	d32 := testDigest[:32]
	tests := []struct {
		body    string
		want    Command
		problem string // a word the problem must say
	}{
		{body: "/nova approve prod " + d32, want: Command{Decision: Approve, Env: Prod, Named: "prod", Digest: d32}},
		{body: "\r\n  /nova approve qa " + testDigest + "  \r\nthanks!", want: Command{Decision: Approve, Env: QA, Named: "qa", Digest: testDigest}},
		{body: "/nova approve Prod " + strings.ToUpper(d32), want: Command{Decision: Approve, Env: Prod, Named: "Prod", Digest: d32}},
		{body: "/nova reject prod the bucket must not be public", want: Command{Decision: Reject, Env: Prod, Named: "prod", Reason: "the bucket must not be public"}},
		{body: "/nova reject PROD too wide\r\nsee the plan, line 3", want: Command{Decision: Reject, Env: Prod, Named: "PROD", Reason: "too wide\nsee the plan, line 3"}},
		{body: "/nova reject prod", want: Command{Decision: Reject, Env: Prod, Named: "prod"}},
		{body: "/nova approve prod " + testDigest[:12], problem: "at least 32"},
		{body: "/nova approve prod " + testDigest[:31], problem: "at least 32"},
		{body: "/nova approve prod " + testDigest + "00", problem: "not a plan digest"},
		{body: "/nova approve prod 3f1c9a0b7e2z" + d32, problem: "not a plan digest"},
		{body: "/nova approve prod", problem: "nothing else"},
		{body: "/nova approve prod " + d32 + " please", problem: "nothing else"},
		{body: "/nova approve production " + d32, problem: "unknown environment"},
		{body: "/nova reject production the bucket is public", problem: "unknown environment"},
		{body: "/nova lgtm prod " + d32, problem: "unknown command"},
		{body: "/nova"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			got, ok := ParseCommand(tt.body)
			if !ok {
				t.Fatal("not read as a command")
			}
			if tt.problem != "" || tt.body == "/nova" {
				if got.Problem == "" || !strings.Contains(got.Problem, tt.problem) {
					t.Fatalf("problem %q, want one saying %q", got.Problem, tt.problem)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
		})
	}
	for _, body := range []string{
		"/Nova approve prod " + d32, "/novaapprove prod " + d32, "> /nova approve prod " + d32,
		"LGTM\n/nova approve prod " + d32, "please /nova approve prod " + d32, "`/nova approve prod " + d32 + "`", "", "\n\n",
	} {
		if cmd, ok := ParseCommand(body); ok {
			t.Errorf("%q read as %+v: not a command", body, cmd)
		}
	}
}

func TestCommentClaim(t *testing.T) {
	planned := time.Date(2026, 11, 30, 10, 0, 0, 700_000_000, time.UTC)
	later := planned.Add(time.Minute)
	req := ApprovalRequest{ContractID: "c1", Environment: QA, PlanDigest: testDigest, Commit: "c0ffee", PlannedAt: planned}
	comment := func(body string, change func(*PostedComment)) PostedComment {
		c := PostedComment{Poster: "bob", Ref: "12", Body: body, Created: later}
		if change != nil {
			change(&c)
		}
		return c
	}
	approval := ApprovalClaim{Approver: "bob", Environment: QA, PlanDigest: testDigest, Decision: Approve, Source: SourceGiteaComment, SourceRef: "12", At: later}
	with := func(change func(*ApprovalClaim)) *ApprovalClaim {
		c := approval
		change(&c)
		return &c
	}
	rejection := func(reason string) *ApprovalClaim {
		return with(func(c *ApprovalClaim) { c.Decision, c.Reason = Reject, reason })
	}
	problem := func(decision Decision) *ApprovalClaim {
		return with(func(c *ApprovalClaim) { c.Decision, c.Problem = decision, "*" })
	}
	tests := []struct {
		name    string
		comment PostedComment
		want    *ApprovalClaim
	}{
		{"approve with 32 digits", comment("/nova approve qa "+testDigest[:32], nil), &approval},
		{"approve with the whole digest", comment("/nova approve qa "+testDigest, nil), &approval},
		{"approve naming the environment in capitals", comment("/nova approve QA "+testDigest, nil), &approval},
		{"approve with 12 digits is answered", comment("/nova approve qa "+testDigest[:12], nil), problem(Approve)},
		{"approve of another plan", comment("/nova approve qa 0123456789abcdef0123456789abcdef", nil), nil},
		{"approve in another environment", comment("/nova approve prod "+testDigest, nil), nil},
		{"an edited approval never approves, and says so", comment("/nova approve qa "+testDigest, func(c *PostedComment) { c.Edited = true }), problem(Approve)},
		{"approval stamped in the plan's second", comment("/nova approve qa "+testDigest, func(c *PostedComment) { c.Created = planned.Truncate(time.Second) }),
			with(func(c *ApprovalClaim) { c.At = planned.Truncate(time.Second) })},
		{"created before the plan went on show", comment("/nova approve qa "+testDigest, func(c *PostedComment) { c.Created = planned.Add(-time.Hour) }), nil},
		{"rejection stamped in the plan's second", comment("/nova reject qa no", func(c *PostedComment) { c.Created = planned.Truncate(time.Second) }), nil},
		{"reject with a reason", comment("/nova reject qa the plan deletes the bucket", nil), rejection("the plan deletes the bucket")},
		{"reject naming the environment in capitals", comment("/nova reject Qa no", nil), rejection("no")},
		{"an edited rejection still holds the plan", comment("/nova reject qa no", func(c *PostedComment) { c.Edited = true }), rejection("no")},
		{"reject naming an unknown environment is answered", comment("/nova reject production no", nil), problem(Reject)},
		{"reject in another environment", comment("/nova reject prod no", nil), nil},
		{"no poster", comment("/nova reject qa no", func(c *PostedComment) { c.Poster = "" }), nil},
		{"an ordinary comment", comment("LGTM", nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CommentClaim(tt.comment, req, SourceGiteaComment)
			if tt.want == nil {
				if ok {
					t.Fatalf("claim %+v, want none", got)
				}
				return
			}
			if !ok {
				t.Fatal("no claim")
			}
			if tt.want.Problem == "*" {
				if got.Problem == "" {
					t.Fatalf("claim %+v, want one with a problem", got)
				}
				got.Problem = "*"
			}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("claim (-want +got):\n%s", diff)
			}
		})
	}
}
