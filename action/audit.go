package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/runner/audit/report"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/index"
)

// The commands that answer from verified evidence: `nova evidence query`,
// `nova evidence export` and `nova report`. Each verifies the repo through
// the evidence index (rebuilt or extended as the head moves) and refuses
// to answer about a contract whose chain, or about a history whose
// commits, do not verify.

// checkAudit checks the audit commands' flags.
func (cfg *Config) checkAudit() error {
	a := &cfg.Audit
	switch cfg.Command {
	case "query":
		if !slices.Contains([]string{"table", "jsonl", "csv"}, cfg.Output) {
			return runner.Errorf(runner.ConfigInvalid, "--output %q: want table, jsonl or csv", cfg.Output)
		}
		for _, e := range a.Environments {
			if !runner.Environment(e).Valid() {
				return runner.Errorf(runner.ConfigInvalid, "--env %q: want dev, qa, prod or dr", e)
			}
		}
		if err := (audit.Query{Types: a.Types}).CheckPatterns(); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--type: %w", err)
		}
		for _, r := range a.Reasons {
			if _, ok := runner.Lookup(runner.Reason(r)); !ok {
				return runner.Errorf(runner.ConfigInvalid, "--reason %q is not a reason code (docs/reason-codes.md)", r)
			}
		}
		for flagName, v := range map[string]string{"--since": a.Since, "--until": a.Until} {
			if _, err := audit.ParseTime(v, time.Now()); err != nil {
				return runner.Errorf(runner.ConfigInvalid, "%s: %w", flagName, err)
			}
		}
	case "export":
		if a.Format != "jsonl" && a.Format != "csv" {
			return runner.Errorf(runner.ConfigInvalid, "--format %q: want jsonl or csv", a.Format)
		}
		if a.Out == "" {
			return runner.Errorf(runner.ConfigInvalid, "--out is required: the directory to write the tables into")
		}
	case "report":
		if a.Out == "" {
			return runner.Errorf(runner.ConfigInvalid, "--out is required: the HTML file to write")
		}
	}
	return nil
}

// verifiedIndex opens the evidence repo and brings its index (kept in the
// evidence state dir, beside the witness) to the head, then checks that
// everything the command answers about verifies: the whole history, and
// the chains of the contracts asked about (of every contract when none
// is). The error carries verify's reason code.
func verifiedIndex(ctx context.Context, cfg Config) (*chain.Repo, *index.Index, error) {
	s := cfg.Evidence
	opts, err := verifyOptions(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	repo, err := chain.OpenRepo(ctx, s.Repo, s.Branch, s.Creds)
	if err != nil {
		return nil, nil, err
	}
	ix, err := index.UpdateIndex(ctx, repo, index.IndexFile(evidence.StateDirFor(s.Paths.StateBase, s.Repo)), index.IndexOptions{
		Verify: opts, Facets: audit.Facets, FacetsVersion: audit.FacetsVersion, Rebuild: cfg.Audit.Reindex,
	})
	if err == nil {
		err = ix.Check(cfg.Audit.Contracts...)
	}
	if err != nil {
		repo.Close()
		return nil, nil, err
	}
	return repo, ix, nil
}

// refused reports a command that could not answer and returns the exit
// code's error: a repo that does not verify is a verdict (exit 1), as for
// verify; anything else is an error (exit 2).
func refused(env Env, cfg Config, err error) error {
	reason := runner.ReasonOf(err)
	if info, ok := runner.Lookup(reason); ok && info.Kind == runner.KindVerdict {
		fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cfg.displayName(), reason, err)
		return verdict(runner.Fail, reason)
	}
	return failed(env, cfg, err)
}

func evidenceQuery(ctx context.Context, cfg Config, env Env) error {
	a := cfg.Audit
	now := time.Now()
	q := audit.Query{Contracts: a.Contracts, Environments: a.Environments, Types: a.Types, Approvers: a.Approvers, Reasons: a.Reasons}
	q.Since, _ = audit.ParseTime(a.Since, now)
	q.Until, _ = audit.ParseTime(a.Until, now)
	repo, ix, err := verifiedIndex(ctx, cfg)
	if err != nil {
		return refused(env, cfg, err)
	}
	defer repo.Close()
	w := bufio.NewWriterSize(env.Stdout, 64<<10)
	out, err := audit.NewEventWriter(w, cfg.Output)
	if err != nil {
		return failed(env, cfg, err)
	}
	reader := repo.NewReader()
	events := ix.Events()
	var open map[string]bool
	if a.OpenReviews {
		if open, err = openReviewUses(ix, reader); err != nil {
			return refused(env, cfg, err)
		}
	}
	for i := range events {
		e := &events[i]
		if !q.Match(e.ContractID, e.Environment, e.Type, e.Time, e.Facets) || (open != nil && !open[e.ID]) {
			continue
		}
		row := audit.EventRow{
			Time: e.Time, ContractID: e.ContractID, Environment: e.Environment, Type: e.Type, Seq: e.Seq, RunID: e.RunID,
			Approvers: audit.Approvers(e.Facets), Reasons: audit.Reasons(e.Facets), EventID: e.ID, EvidenceCommit: e.Commit.String(), Path: e.Path(),
		}
		if out.WantsData() {
			full, err := ix.Read(reader, e)
			if err != nil {
				return refused(env, cfg, err)
			}
			row.Data = full.Data
		}
		if err := out.Write(row); err != nil {
			return failed(env, cfg, err)
		}
	}
	if err := out.Close(); err != nil {
		return failed(env, cfg, err)
	}
	if err := w.Flush(); err != nil {
		return failed(env, cfg, err)
	}
	return nil
}

// auditRecords reads every verified event about the contracts the
// command asks about, and the evidence head they were verified at: what
// export and report are built from.
func auditRecords(ctx context.Context, cfg Config) ([]audit.Record, string, error) {
	repo, ix, err := verifiedIndex(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	defer repo.Close()
	records, err := verifiedRecords(repo, ix, cfg.Audit.Contracts)
	return records, ix.Head(), err
}

// verifiedRecords reads every verified event about the contracts asked
// about, each checked against the bytes that were verified, in chain
// order.
func verifiedRecords(repo *chain.Repo, ix *index.Index, contracts []string) ([]audit.Record, error) {
	reader := repo.NewReader()
	events := ix.Events()
	var out []audit.Record
	for i := range events {
		e := &events[i]
		if len(contracts) > 0 && !slices.Contains(contracts, e.ContractID) {
			continue
		}
		full, err := ix.Read(reader, e)
		if err != nil {
			return nil, err
		}
		out = append(out, audit.Record{Event: full, Commit: e.Commit.String()})
	}
	return out, nil
}

func evidenceExport(ctx context.Context, cfg Config, env Env) error {
	records, head, err := auditRecords(ctx, cfg)
	if err != nil {
		return refused(env, cfg, err)
	}
	if err := os.MkdirAll(cfg.Audit.Out, 0o755); err != nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "--out: %w", err))
	}
	for _, t := range audit.Build(records).List() {
		path := filepath.Join(cfg.Audit.Out, t.Name+"."+cfg.Audit.Format)
		if err := writeTable(path, t, cfg.Audit.Format); err != nil {
			return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "writing %s: %w", path, err))
		}
		fmt.Fprintf(env.Stdout, "%s\t%d rows\n", path, t.Len())
	}
	fmt.Fprintf(env.Stdout, "exported %d verified events at evidence head %s\n", len(records), orEmpty(head))
	return nil
}

// writeTable writes a table whole or not at all: a BI tool loading the
// directory never sees half a file.
func writeTable(path string, t audit.Table, format string) error {
	var b bytes.Buffer
	var err error
	if format == "csv" {
		err = t.WriteCSV(&b)
	} else {
		err = t.WriteJSONL(&b)
	}
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

func reportCommand(ctx context.Context, cfg Config, env Env) error {
	records, head, err := auditRecords(ctx, cfg)
	if err != nil {
		return refused(env, cfg, err)
	}
	page, err := report.Render(report.Input{
		Tables: audit.Build(records), Repo: chain.RedactURL(cfg.Evidence.Repo), Head: head,
		Events: len(records), Generated: time.Now().UTC(), Version: version,
	})
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.InternalError, "rendering the report: %w", err))
	}
	if err := writeFileAtomic(cfg.Audit.Out, page); err != nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "--out: %w", err))
	}
	fmt.Fprintf(env.Stdout, "wrote %s: %d verified events at evidence head %s\n", cfg.Audit.Out, len(records), orEmpty(head))
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func orEmpty(head string) string {
	if head == "" {
		return "(empty)"
	}
	return head
}
