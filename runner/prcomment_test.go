package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// thread is a pull request's comments as a forge keeps them, with the
// forge's rule for who may edit what: a token edits its own user's
// comments, and others' only when canEditOthers (an admin, or a GitHub
// user with write access).
type thread struct {
	me            string
	canEditOthers bool
	comments      []ThreadComment
	calls         []string
	// asked counts the calls of Me.
	asked int
}

func (f *thread) Comments(context.Context) ([]ThreadComment, error) {
	f.calls = append(f.calls, "list")
	return append([]ThreadComment(nil), f.comments...), nil
}

func (f *thread) Me(context.Context) (string, error) {
	f.asked++
	return f.me, nil
}

func (f *thread) EditComment(_ context.Context, id int64, body string) error {
	f.calls = append(f.calls, fmt.Sprintf("edit %d", id))
	for i, c := range f.comments {
		if c.ID != id {
			continue
		}
		if c.Poster != f.me && !f.canEditOthers {
			return fmt.Errorf("editing comment %d: 403: %w", id, ErrCommentNotEditable)
		}
		f.comments[i].Body = body
		return nil
	}
	return fmt.Errorf("no comment %d", id)
}

func (f *thread) PostComment(_ context.Context, body string) (ThreadComment, error) {
	id := int64(100 + len(f.comments))
	f.calls = append(f.calls, fmt.Sprintf("post %d", id))
	c := ThreadComment{ID: id, Poster: f.me, Bot: f.me == "gitea-actions", Body: body, URL: fmt.Sprintf("https://forge.example/pr/1#%d", id)}
	f.comments = append(f.comments, c)
	return c, nil
}

const (
	testMarker = CommentPrefix + "comment contract=c1 env=prod -->"
	jobToken   = "gitea-actions"
)

func novaComment(id int64, poster string, bot bool, text string) ThreadComment {
	return ThreadComment{ID: id, Poster: poster, Bot: bot, Body: testMarker + "\n" + text, URL: fmt.Sprintf("https://forge.example/pr/1#%d", id)}
}

// TestKeepComment: one report per contract and environment stands,
// whichever token posted the earlier ones, and a person's comment that
// merely starts with the marker is never taken for Nova's.
func TestKeepComment(t *testing.T) {
	body := testMarker + "\nprod: applied"
	superseded := func(id int64, poster string, bot bool) ThreadComment {
		return ThreadComment{ID: id, Poster: poster, Bot: bot, Body: supersededNote, URL: fmt.Sprintf("https://forge.example/pr/1#%d", id)}
	}
	tests := []struct {
		name          string
		me            string
		canEditOthers bool
		comments      []ThreadComment
		// want is the thread afterwards; calls what was asked of the forge.
		want  []ThreadComment
		calls []string
	}{
		{
			name:  "the first report is posted",
			me:    jobToken,
			want:  []ThreadComment{{ID: 100, Poster: jobToken, Bot: true, Body: body, URL: "https://forge.example/pr/1#100"}},
			calls: []string{"list", "post 100"},
		},
		{
			name:     "the token's own report is updated in place",
			me:       jobToken,
			comments: []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval")},
			want:     []ThreadComment{novaComment(1, jobToken, true, "prod: applied")},
			calls:    []string{"list", "edit 1"},
		},
		{
			name:     "an unchanged report is left alone",
			me:       jobToken,
			comments: []ThreadComment{novaComment(1, jobToken, true, "prod: applied")},
			want:     []ThreadComment{novaComment(1, jobToken, true, "prod: applied")},
			calls:    []string{"list"},
		},
		{
			name:          "switched to an admin's token: the job token's report is updated, no second one",
			me:            "admin",
			canEditOthers: true,
			comments:      []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval")},
			want:          []ThreadComment{novaComment(1, jobToken, true, "prod: applied")},
			calls:         []string{"list", "edit 1"},
		},
		{
			name:     "switched to a token that may not edit it: a new report says the old one is out of date",
			me:       "nova-bot",
			comments: []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval")},
			want: []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval"),
				{ID: 101, Poster: "nova-bot", Body: body + staleNote([]ThreadComment{novaComment(1, jobToken, true, "")}), URL: "https://forge.example/pr/1#101"}},
			calls: []string{"list", "edit 1", "post 101"},
		},
		{
			name:     "and the next run changes nothing",
			me:       "nova-bot",
			comments: []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval"), {ID: 101, Poster: "nova-bot", Body: body + staleNote([]ThreadComment{novaComment(1, jobToken, true, "")})}},
			want:     []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval"), {ID: 101, Poster: "nova-bot", Body: body + staleNote([]ThreadComment{novaComment(1, jobToken, true, "")})}},
			calls:    []string{"list", "edit 1"},
		},
		{
			name:          "the token's own report stands and the job token's is marked superseded",
			me:            "admin",
			canEditOthers: true,
			comments:      []ThreadComment{novaComment(1, jobToken, true, "prod: awaiting approval"), novaComment(2, "admin", false, "prod: planned")},
			want:          []ThreadComment{superseded(1, jobToken, true), novaComment(2, "admin", false, "prod: applied")},
			calls:         []string{"list", "edit 1", "edit 2"},
		},
		{
			name:     "duplicates of the token's own converge to one",
			me:       jobToken,
			comments: []ThreadComment{novaComment(1, jobToken, true, "old"), novaComment(2, jobToken, true, "older")},
			want:     []ThreadComment{novaComment(1, jobToken, true, "prod: applied"), superseded(2, jobToken, true)},
			calls:    []string{"list", "edit 2", "edit 1"},
		},
		{
			// The marker is text anyone can type: a person's comment that
			// starts with it is theirs, even to a token that could edit it.
			name:          "a person's comment that starts with the marker is not Nova's",
			me:            "admin",
			canEditOthers: true,
			comments:      []ThreadComment{novaComment(1, "mallory", false, "prod: approved by sre ✅")},
			want:          []ThreadComment{novaComment(1, "mallory", false, "prod: approved by sre ✅"), {ID: 101, Poster: "admin", Body: body, URL: "https://forge.example/pr/1#101"}},
			calls:         []string{"list", "post 101"},
		},
		{
			name: "a bot's comment that quotes the marker further down is not Nova's",
			me:   jobToken,
			comments: []ThreadComment{{ID: 1, Poster: "renovate", Bot: true, Body: "see " + testMarker},
				novaComment(2, jobToken, true, "prod: planned")},
			want:  []ThreadComment{{ID: 1, Poster: "renovate", Bot: true, Body: "see " + testMarker}, novaComment(2, jobToken, true, "prod: applied")},
			calls: []string{"list", "edit 2"},
		},
		{
			name:     "another environment's report is another report",
			me:       jobToken,
			comments: []ThreadComment{{ID: 1, Poster: jobToken, Bot: true, Body: CommentPrefix + "comment contract=c1 env=qa -->\nqa: applied"}},
			want: []ThreadComment{{ID: 1, Poster: jobToken, Bot: true, Body: CommentPrefix + "comment contract=c1 env=qa -->\nqa: applied"},
				{ID: 101, Poster: jobToken, Bot: true, Body: body, URL: "https://forge.example/pr/1#101"}},
			calls: []string{"list", "post 101"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &thread{me: tt.me, canEditOthers: tt.canEditOthers, comments: tt.comments}
			if err := KeepComment(t.Context(), f, testMarker, body); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, f.comments); diff != "" {
				t.Errorf("comments (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepCommentRefusesABodyWithoutItsMarker(t *testing.T) {
	f := &thread{me: jobToken}
	for _, tt := range []struct{ marker, body string }{
		{testMarker, "no marker"},
		{testMarker, "text first\n" + testMarker},
		{"<!-- other -->", "<!-- other -->\nbody"},
		{"", "body"},
	} {
		if err := KeepComment(t.Context(), f, tt.marker, tt.body); ReasonOf(err) != InternalError {
			t.Errorf("KeepComment(%q, %q) = %v, want %s", tt.marker, tt.body, err, InternalError)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("the forge was asked %v", f.calls)
	}
}

// TestKeepCommentAsksWhoOnlyForAPersonsComment: who the token is matters
// only when a comment with the marker was posted by no bot; a thread of
// bots' comments is kept without asking, and a KeptThread lists once for
// many markers.
func TestKeepCommentAsksWhoOnlyForAPersonsComment(t *testing.T) {
	other := CommentPrefix + "comment contract=c2 env=prod -->"
	f := &thread{me: jobToken, comments: []ThreadComment{novaComment(1, jobToken, true, "old")}}
	kept := KeepThread(f)
	for _, m := range []string{testMarker, other, testMarker} {
		if err := KeepComment(t.Context(), kept, m, m+"\nnew"); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"list", "edit 1", "post 101"}, f.calls); diff != "" || f.asked != 0 {
		t.Errorf("asked who the token is %d time(s); calls (-want +got):\n%s", f.asked, diff)
	}
	f = &thread{me: "alice", comments: []ThreadComment{novaComment(1, "mallory", false, "a copy")}}
	if err := KeepComment(t.Context(), f, testMarker, testMarker+"\nnew"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"list", "post 101"}, f.calls); diff != "" || f.asked != 1 {
		t.Errorf("with a person's marked comment, asked who the token is %d time(s), want 1; calls (-want +got):\n%s", f.asked, diff)
	}
}
