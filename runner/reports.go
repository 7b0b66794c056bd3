package runner

import (
	"context"
	"sync"
)

// StatusLister reads the commit statuses a commit has now, the newest of
// each context.
type StatusLister interface {
	ListStatuses(ctx context.Context, commit string) ([]CommitStatus, error)
}

// KeptStatuses sets commit statuses, skipping those the commit already
// has exactly: a re-run of an unchanged change rewrites nothing. The
// commit's statuses are read once, on its first status, so this pays
// only for a job setting many (a listing page holds a hundred); for one
// status the read would cost what it can save.
type KeptStatuses struct {
	Set  StatusSetter
	List StatusLister

	mu    sync.Mutex
	known map[string]map[string]CommitStatus // commit → context → status
}

var _ StatusSetter = (*KeptStatuses)(nil)

// SetStatus sets s on commit unless the commit has it already. A listing
// that fails costs nothing but the skip: the status is set.
func (k *KeptStatuses) SetStatus(ctx context.Context, commit string, s CommitStatus) error {
	k.mu.Lock()
	if k.known == nil {
		k.known = map[string]map[string]CommitStatus{}
	}
	have, ok := k.known[commit]
	if !ok {
		// Held across the read: the other runs wait for this listing
		// instead of making their own.
		have = map[string]CommitStatus{}
		if all, err := k.List.ListStatuses(ctx, commit); err == nil {
			for _, st := range all {
				have[st.Context] = st
			}
		}
		k.known[commit] = have
	}
	same := have[s.Context] == s
	k.mu.Unlock()
	if same {
		return nil
	}
	if err := k.Set.SetStatus(ctx, commit, s); err != nil {
		return err
	}
	k.mu.Lock()
	have[s.Context] = s
	k.mu.Unlock()
	return nil
}

// CheckRun is one contract's report as a check run on the commit: where
// the detail of each contract goes when one summary comment on the pull
// request stands for many.
type CheckRun struct {
	// Name is the check's name, one per contract and environment.
	Name  string
	State CommitState
	// Title is one line; Summary is Markdown, its text already escaped.
	Title, Summary string
	// DetailsURL is the workflow run, whose artifacts hold what a
	// summary too long for the forge leaves out.
	DetailsURL string
}

// CheckRunReporter publishes check runs (GitHub's Checks API).
type CheckRunReporter interface {
	ReportCheckRun(ctx context.Context, commit string, c CheckRun) error
}
