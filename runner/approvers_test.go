package runner

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseApprovers(t *testing.T) {
	tests := []struct {
		name, yaml, mention string
	}{
		{"valid with defaults", "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-1], teams: [platform/sre]}\n", ""},
		{"valid with an override", "groups:\n  qa: {members: [a]}\n  ops: {members: [b]}\nenvironments:\n  prod: ops\n  dr: ops\n", ""},
		{"unknown field", "groups:\n  qa: {members: [a], member: [b]}\n  sre: {members: [c]}\n", "member"},
		{"typo at the top", "group:\n  qa: {members: [a]}\n", "group"},
		{"environment mapped to no group", "groups:\n  qa: {members: [a]}\n  sre: {members: [b]}\nenvironments:\n  prod: ops\n", `"ops"`},
		{"dev cannot need approval", "groups:\n  qa: {members: [a]}\n  sre: {members: [b]}\nenvironments:\n  dev: qa\n", "dev"},
		{"default group missing", "groups:\n  qa: {members: [a]}\n", `"sre"`},
		{"malformed member", "groups:\n  qa: {members: [\"a b\"]}\n  sre: {members: [c]}\n", `"a b"`},
		{"malformed team", "groups:\n  qa: {members: [a], teams: [justateam]}\n  sre: {members: [c]}\n", "org/team"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseApprovers([]byte(tt.yaml))
			if tt.mention == "" {
				if err != nil || cfg == nil {
					t.Fatalf("ParseApprovers: %v", err)
				}
				return
			}
			if ReasonOf(err) != ApproversInvalid || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("err %v, want %s mentioning %s", err, ApproversInvalid, tt.mention)
			}
		})
	}
	cfg, _ := ParseApprovers([]byte("groups:\n  qa: {members: [z, a]}\n  ops: {members: [b]}\nenvironments:\n  prod: ops\n  dr: ops\n"))
	if cfg.GroupFor(QA) != "qa" || cfg.GroupFor(Prod) != "ops" || cfg.GroupFor(Dev) != "" || fmt.Sprint(cfg.Members("qa")) != "[a z]" {
		t.Errorf("groups: qa→%s prod→%s dev→%q members %v", cfg.GroupFor(QA), cfg.GroupFor(Prod), cfg.GroupFor(Dev), cfg.Members("qa"))
	}
}

func TestCommentAfterPlan(t *testing.T) {
	planned := time.Date(2026, 11, 30, 10, 0, 0, 700_000_000, time.UTC)
	second := planned.Truncate(time.Second)
	for _, tc := range []struct {
		at   time.Time
		d    Decision
		want bool
	}{
		{second, Approve, true},
		{second.Add(-time.Second), Approve, false},
		{second.Add(time.Second), Approve, true},
		{second, Reject, false},
		{second.Add(time.Second), Reject, true},
	} {
		if got := CommentAfterPlan(tc.at, planned, tc.d); got != tc.want {
			t.Errorf("CommentAfterPlan(%s, %s, %s) = %v, want %v", tc.at.Format(time.RFC3339), planned.Format(time.RFC3339Nano), tc.d, got, tc.want)
		}
	}
}
