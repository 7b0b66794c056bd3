package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// CommentPrefix starts every comment Nova posts on a pull request (its
// markers, and the note on a superseded comment): the workflows Nova
// scaffolds skip issue_comment events whose body starts with it, so
// Nova's own comments never start a run.
const CommentPrefix = "<!-- nova:"

// supersededNote replaces the text of a comment of Nova's that another
// now stands for. It starts with CommentPrefix and not with any marker,
// so it is never found again as the one to keep.
const supersededNote = CommentPrefix + "superseded -->\n*Out of date: Nova keeps the current report of this contract and environment in another comment on this pull request.*\n"

// ErrCommentNotEditable is what CommentThread.EditComment wraps when the
// forge refuses the token the edit (another user's comment, on a forge or
// with a role that does not let it edit it).
var ErrCommentNotEditable = errors.New("the forge does not let this token edit the comment")

// ThreadComment is a pull request comment as KeepComment weighs it.
type ThreadComment struct {
	ID     int64
	Poster string
	// Bot is true when the forge says an app or its own actions user
	// posted it, an account no person signs in as (GitHub's user type
	// "Bot"; Gitea's gitea-actions).
	Bot  bool
	Body string
	// URL is where the forge shows it.
	URL string
}

// CommentThread is a pull request's comments, to keep Nova's own among
// them.
type CommentThread interface {
	// Comments lists the comments oldest first.
	Comments(ctx context.Context) ([]ThreadComment, error)
	// Me names the token's own user ("" when the forge does not say, as
	// for GitHub's job token). KeepComment asks only when a comment with
	// its marker was posted by someone the forge calls no bot: the job
	// token's comments are a bot's, so a workflow that only ever used it
	// never spends the request.
	Me(ctx context.Context) (string, error)
	// EditComment replaces a comment's text; ErrCommentNotEditable when
	// the forge refuses this token.
	EditComment(ctx context.Context, id int64, body string) error
	PostComment(ctx context.Context, body string) (ThreadComment, error)
}

// KeepComment keeps one comment with marker on the pull request, with
// body, whatever token posted the earlier ones: the job token, an app's,
// or a personal token the workflow switched to.
//
// A comment is Nova's when its body starts with marker and the forge says
// it was posted by the token's own user or by a bot (an app, or the
// forge's actions user): the marker is text anyone can type, who posted a
// comment is not. So a person's comment that starts with the marker — a
// copy meant to pass for Nova's — is never edited, while the comments the
// job token left are found after the workflow switched to another token.
// (A personal token used before is a person's account too: its old
// comments cannot be told from that person's own and are left alone.)
//
// The token's own comment is updated first; otherwise the first of Nova's
// it may edit; otherwise a new one is posted. Every other comment of
// Nova's with the marker is marked superseded, so one report stands. A
// superseded comment is edited, never deleted: what Nova said stays on
// the pull request. When the forge will not let this token mark one, the
// comment that stands says so and links it.
func KeepComment(ctx context.Context, t CommentThread, marker, body string) error {
	if !strings.HasPrefix(marker, CommentPrefix) || !strings.HasPrefix(body, marker) {
		return Errorf(InternalError, "a pull request comment must start with its marker, and the marker with %q", CommentPrefix)
	}
	all, err := t.Comments(ctx)
	if err != nil {
		return err
	}
	// Who the token is matters only for a marked comment no bot posted:
	// it is either the token's own or a person's to leave alone. Bots'
	// comments are Nova's either way, in the order they were posted.
	me := ""
	if slices.ContainsFunc(all, func(c ThreadComment) bool { return strings.HasPrefix(c.Body, marker) && !c.Bot }) {
		if me, err = t.Me(ctx); err != nil {
			return err
		}
	}
	// The token's own first: those it may always edit.
	var own, others []ThreadComment
	for _, c := range all {
		switch {
		case !strings.HasPrefix(c.Body, marker):
		case me != "" && LoginOf(c.Poster) == LoginOf(me):
			own = append(own, c)
		case c.Bot:
			others = append(others, c)
		}
	}
	ours := append(own, others...)
	if len(ours) == 0 {
		_, err := t.PostComment(ctx, body)
		return err
	}
	// The first is the one to keep, unless the token may not edit it;
	// the rest are superseded. Marking them first tells which cannot be
	// marked, so the kept comment names them in the same write, and says
	// the same on the next run (no edit when nothing changed).
	keep, rest := ours[0], ours[1:]
	var unmarked []ThreadComment
	for _, c := range rest {
		if err := t.EditComment(ctx, c.ID, supersededNote); errors.Is(err, ErrCommentNotEditable) {
			unmarked = append(unmarked, c)
		} else if err != nil {
			return err
		}
	}
	want := body + staleNote(unmarked)
	if keep.Body == want {
		return nil
	}
	err = t.EditComment(ctx, keep.ID, want)
	if !errors.Is(err, ErrCommentNotEditable) {
		return err
	}
	// Not the token's to edit (the job token's comment, read with a
	// personal token that may not edit others'): a new one stands, and
	// says the old one is out of date.
	_, err = t.PostComment(ctx, body+staleNote(append([]ThreadComment{keep}, unmarked...)))
	return err
}

// staleNote names Nova's comments this token could not mark superseded.
func staleNote(stale []ThreadComment) string {
	if len(stale) == 0 {
		return ""
	}
	var links []string
	for _, c := range stale {
		if c.URL != "" {
			links = append(links, fmt.Sprintf("[comment %d](%s)", c.ID, c.URL))
		} else {
			links = append(links, fmt.Sprintf("comment %d", c.ID))
		}
	}
	return fmt.Sprintf("\n\n*Out of date: Nova's earlier %s, which this run's token may not edit. This comment is the current report.*\n", strings.Join(links, ", "))
}

// KeptThread is a CommentThread read once and then kept: the comments are
// listed on the first call only, and what this process posts and edits
// through it is applied to that listing. A job reporting many contracts
// shares one, so it lists the pull request's comments once rather than
// once per contract, which on a pull request with a comment per contract
// would cost requests growing with the square of the contracts.
//
// What others post meanwhile is not seen, and need not be: Nova's
// comments are found by marker, and each marker belongs to one contract
// and environment, reported by one job.
type KeptThread struct {
	inner CommentThread

	mu       sync.Mutex
	loaded   bool
	comments []ThreadComment
	meKnown  bool
	me       string
}

var _ CommentThread = (*KeptThread)(nil)

// KeepThread keeps inner's comments, read once.
func KeepThread(inner CommentThread) *KeptThread { return &KeptThread{inner: inner} }

// Comments lists the comments on the first call, and returns a copy of
// the kept listing after. A failed listing is not kept: the next call
// asks again.
func (k *KeptThread) Comments(ctx context.Context) ([]ThreadComment, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.loaded {
		// Held across the request: the runs that ask meanwhile wait for
		// this listing instead of making their own.
		all, err := k.inner.Comments(ctx)
		if err != nil {
			return nil, err
		}
		k.comments, k.loaded = all, true
	}
	return slices.Clone(k.comments), nil
}

// Me asks once.
func (k *KeptThread) Me(ctx context.Context) (string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.meKnown {
		me, err := k.inner.Me(ctx)
		if err != nil {
			return "", err
		}
		k.me, k.meKnown = me, true
	}
	return k.me, nil
}

// EditComment edits, and keeps the new text.
func (k *KeptThread) EditComment(ctx context.Context, id int64, body string) error {
	if err := k.inner.EditComment(ctx, id, body); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := range k.comments {
		if k.comments[i].ID == id {
			k.comments[i].Body = body
		}
	}
	return nil
}

// PostComment posts, and keeps the new comment.
func (k *KeptThread) PostComment(ctx context.Context, body string) (ThreadComment, error) {
	c, err := k.inner.PostComment(ctx, body)
	if err != nil {
		return c, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded {
		// The forge's answer may leave the body out (a fake, an old
		// server): what was sent is what stands.
		kept := c
		if kept.Body == "" {
			kept.Body = body
		}
		k.comments = append(k.comments, kept)
	}
	return c, nil
}

// Supersede marks comment c of Nova's out of date, when this token may
// edit it: a report that now stands elsewhere (the summary of many
// contracts that replaced per-contract comments, a part no longer used).
func Supersede(ctx context.Context, t CommentThread, c ThreadComment) error {
	if c.Body == supersededNote {
		return nil
	}
	err := t.EditComment(ctx, c.ID, supersededNote)
	if errors.Is(err, ErrCommentNotEditable) {
		return nil
	}
	return err
}
