package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// A sharded fan-out's jobs each run a few contracts, so none of them alone
// crosses the summary threshold, and a summary per job would still be one
// per shard. Instead each job writes its contracts' results to a file
// (--results) and posts no comment; the fan-out's last job gathers the
// files and posts one summary per pull request and environment
// (`nova summary --from`).

// fanoutKey is the key of the summaries `nova summary` posts: one set per
// pull request and environment, whichever shards ran.
const fanoutKey = "fanout"

// resultsVersion is the version of the results file's shape.
const resultsVersion = 1

// The bounds of what `nova summary` reads: the files come from the jobs
// that ran on the pull request's checkout, so they are input to check, not
// to trust. 50 000 results is 256 shards of a change far past any the
// forge takes in one pull request.
const (
	maxResultsFileBytes  = 4 << 20
	maxResultsTotalBytes = 64 << 20
	maxResultsFiles      = 2048
	maxResults           = 50000
	maxResultPath        = 1024
	maxResultGroup       = 256
)

// fanoutResults is one job's results file.
type fanoutResults struct {
	Version int    `json:"version"`
	Command string `json:"command"`
	// Attempt is the workflow run's attempt that wrote it: a job run
	// again writes its contracts' results anew, and the newest attempt's
	// stand.
	Attempt int            `json:"attempt"`
	Results []fanoutResult `json:"results"`
}

// fanoutResult is what a summary row needs of one contract's run: no
// plan, no finding but the first line that says why, no secret.
type fanoutResult struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Environment string `json:"environment"`
	Command     string `json:"command"`
	Verdict     string `json:"verdict"`
	Reason      string `json:"reason,omitempty"`
	Digest      string `json:"digest,omitempty"`
	Receipt     string `json:"receipt,omitempty"`
	// Detail is the first finding of the stage that did not pass.
	Detail string `json:"detail,omitempty"`
	// Group is the approver group of the environment, when the run waits
	// for approval.
	Group string `json:"group,omitempty"`
}

var hexDigits = regexp.MustCompile(`^[0-9a-f]{1,128}$`)

// reasonCode is the shape of a reason code: a policy of the consumer's
// may name its own, so the shape is checked, not the list.
var reasonCode = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)

// resultCommands are the commands whose runs a summary reports.
var resultCommands = []string{"validate", "explain", "plan", "run"}

// writeResults writes the results of a job's runs to file.
func writeResults(cfg Config, file string, views []runView, paths map[string]string, groups map[string]string) error {
	attempt, _ := strconv.Atoi(os.Getenv("GITHUB_RUN_ATTEMPT"))
	doc := fanoutResults{Version: resultsVersion, Command: cfg.Command, Attempt: max(attempt, 1), Results: []fanoutResult{}}
	for _, v := range views {
		if v.ContractID == "" || v.Environment == "" {
			// A contract that did not parse has no row: its status says so.
			continue
		}
		r := fanoutResult{ID: v.ContractID, Path: paths[v.ContractID], Environment: v.Environment, Command: v.Command,
			Verdict: v.Verdict, Reason: v.Reason, Digest: v.PlanDigest, Receipt: v.Receipt}
		if r.Command == "" {
			r.Command = cfg.Command
		}
		for _, s := range v.Stages {
			if s.Verdict != runner.Pass && len(s.Findings) > 0 {
				r.Detail = truncateRunes(oneLine(s.Findings[0].Message), maxDetailText)
				break
			}
		}
		if waitsForApproval(v) {
			r.Group = groups[v.Environment]
		}
		doc.Results = append(doc.Results, r)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return runner.Errorf(runner.InternalError, "encoding the results: %w", err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "writing the results to %s: %w", file, err)
	}
	return nil
}

// approverGroups are the approver groups of the environments whose runs
// wait for approval, read once per environment.
func approverGroups(ctx context.Context, forge *forgeAdapters, views []runView) map[string]string {
	groups := map[string]string{}
	if forge == nil || forge.approvers == nil {
		return groups
	}
	for _, v := range views {
		if _, done := groups[v.Environment]; done || !waitsForApproval(v) {
			continue
		}
		groups[v.Environment] = ""
		if ac, err := forge.approvers.Approvers(ctx); err == nil {
			groups[v.Environment] = ac.GroupFor(runner.Environment(v.Environment))
		}
	}
	return groups
}

func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// errResults is a results file refused.
func errResults(format string, args ...any) error {
	return runner.Errorf(runner.FanoutResultsInvalid, format, args...)
}

// readResults reads every results file under dir (*.json, at any depth:
// a download of several artifacts puts each in its own directory), checks
// each, and returns the newest attempt's result of each contract and
// environment, and the command they ran.
//
// With none, a directory that is missing or holds no results file is no
// error: the summary then knows the selection, and says each contract of
// it has no result.
func readResults(dir string, none bool) (string, []fanoutResult, error) {
	var (
		command string
		files   []string
		total   int64
		out     []fanoutResult
		at      = map[[2]string]int{}
		attempt = map[[2]string]int{}
	)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if none && p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return errResults("%s is a symbolic link: want the results files themselves", p)
		case !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".json"):
			return nil
		}
		if files = append(files, p); len(files) > maxResultsFiles {
			return errResults("more than %d results files under %s", maxResultsFiles, dir)
		}
		return nil
	})
	if err != nil {
		if runner.ReasonOf(err) == runner.FanoutResultsInvalid {
			return "", nil, err
		}
		return "", nil, errResults("reading %s: %w", dir, err)
	}
	if len(files) == 0 && !none {
		return "", nil, errResults("no results file (*.json) under %s: did any job of the fan-out write one?", dir)
	}
	for _, p := range files {
		doc, size, err := readResultsFile(p)
		if err != nil {
			return "", nil, err
		}
		if total += size; total > maxResultsTotalBytes {
			return "", nil, errResults("the results files under %s hold more than %d bytes", dir, maxResultsTotalBytes)
		}
		if command == "" {
			command = doc.Command
		} else if doc.Command != command {
			return "", nil, errResults("%s holds the results of nova %s, another file those of nova %s: one fan-out runs one command", p, doc.Command, command)
		}
		for i, r := range doc.Results {
			k := [2]string{r.ID, r.Environment}
			j, dup := at[k]
			switch {
			case !dup:
				if len(out) >= maxResults {
					return "", nil, errResults("more than %d results under %s", maxResults, dir)
				}
				at[k], attempt[k] = len(out), doc.Attempt
				out = append(out, r)
			case attempt[k] == doc.Attempt:
				return "", nil, errResults("%s result %d: contract %q in %s is in two results files of attempt %d: one contract runs in one job", p, i, r.ID, r.Environment, doc.Attempt)
			case doc.Attempt > attempt[k]:
				out[j], attempt[k] = r, doc.Attempt
			}
		}
	}
	return command, out, nil
}

// readResultsFile reads and checks one results file.
func readResultsFile(p string) (fanoutResults, int64, error) {
	var doc fanoutResults
	f, err := os.Open(p)
	if err != nil {
		return doc, 0, errResults("opening %s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResultsFileBytes+1))
	if err != nil {
		return doc, 0, errResults("reading %s: %w", p, err)
	}
	if len(b) > maxResultsFileBytes {
		return doc, 0, errResults("%s is larger than %d bytes", p, maxResultsFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, 0, errResults("%s is not a results file: %v", p, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return doc, 0, errResults("%s holds more than one JSON document", p)
	}
	if doc.Version != resultsVersion {
		return doc, 0, errResults("%s: version %d, want %d", p, doc.Version, resultsVersion)
	}
	if !slices.Contains(resultCommands, doc.Command) {
		return doc, 0, errResults("%s: command %q, want one of %s", p, doc.Command, strings.Join(resultCommands, ", "))
	}
	if doc.Attempt < 1 || doc.Attempt > 1000 {
		return doc, 0, errResults("%s: attempt %d, want 1 to 1000", p, doc.Attempt)
	}
	for i, r := range doc.Results {
		if err := r.check(); err != nil {
			return doc, 0, errResults("%s result %d: %v", p, i, err)
		}
	}
	return doc, int64(len(b)), nil
}

// check refuses a result whose fields are not what a run writes. Free
// text (path, detail, group) is bounded here and escaped where rendered.
func (r fanoutResult) check() error {
	verdicts := []runner.Verdict{runner.Pass, runner.Fail, runner.AwaitingApproval, runner.Errored}
	switch {
	case !schema.ValidID(r.ID):
		return fmt.Errorf("contract id %q is not one a contract may have", r.ID)
	case !runner.Environment(r.Environment).Valid():
		return fmt.Errorf("environment %q: want dev, qa, prod or dr", r.Environment)
	case !slices.Contains(resultCommands, r.Command):
		return fmt.Errorf("command %q", r.Command)
	case !slices.Contains(verdicts, runner.Verdict(r.Verdict)):
		return fmt.Errorf("verdict %q", r.Verdict)
	case r.Reason != "" && !reasonCode.MatchString(r.Reason):
		return fmt.Errorf("reason %q is not a reason code (A_CODE_LIKE_THIS)", r.Reason)
	case r.Digest != "" && !hexDigits.MatchString(r.Digest):
		return fmt.Errorf("digest %q: want lowercase hex", r.Digest)
	case r.Receipt != "" && !hexDigits.MatchString(r.Receipt):
		return fmt.Errorf("receipt %q: want lowercase hex", r.Receipt)
	case !utf8.ValidString(r.Path) || len(r.Path) > maxResultPath || strings.ContainsAny(r.Path, "\x00\r\n"):
		return fmt.Errorf("path: want one line of UTF-8, at most %d bytes", maxResultPath)
	case !utf8.ValidString(r.Detail) || utf8.RuneCountInString(r.Detail) > maxDetailText || strings.ContainsAny(r.Detail, "\x00\r\n"):
		return fmt.Errorf("detail: want one line of UTF-8, at most %d characters", maxDetailText)
	case !utf8.ValidString(r.Group) || len(r.Group) > maxResultGroup || strings.ContainsAny(r.Group, "\x00\r\n"):
		return fmt.Errorf("group: want one line of UTF-8, at most %d bytes", maxResultGroup)
	}
	return nil
}

// view is the run a result stands for, as much of it as a summary row
// reads.
func (r fanoutResult) view() runView {
	v := runView{Command: r.Command, ContractID: r.ID, Environment: r.Environment, Verdict: r.Verdict, Reason: r.Reason, PlanDigest: r.Digest, Receipt: r.Receipt}
	if r.Detail != "" {
		v.Stages = []stageView{{Verdict: runner.Fail, Findings: []runner.Finding{{Message: r.Detail}}}}
	}
	return v
}

// maxSelectionBytes bounds the selection file: GitHub caps a job's
// outputs, the matrix among them, at 1 MB.
const maxSelectionBytes = 4 << 20

// unknownEnvironment is where the summary lists a contract with no result
// whose environment the selection does not say (a shard's members carry
// none, to keep the matrix within the forge's output limit).
const unknownEnvironment = "unknown"

// verdictNoResult is the row of a selected contract without a result:
// no verdict of a run, as nothing says whether it ran.
const verdictNoResult = "no_result"

// selectedContract is one contract the fan-out's selection holds.
type selectedContract struct {
	member shardMember
	// env is the contract's environment when its matrix entry says it
	// (one contract per job), else empty.
	env string
}

// readSelection reads the matrix `nova matrix --selection` wrote. It went
// through the workflow's artifacts, so it is checked as the jobs check
// their --shard.
func readSelection(p string) ([]selectedContract, error) {
	m, err := readMatrixFile(p)
	if err != nil {
		return nil, err
	}
	var out []selectedContract
	for i, e := range m.Include {
		members, err := parseShard(e.Shard)
		if err != nil {
			return nil, errResults("the selection's job %d: %v", i+1, err)
		}
		env := ""
		if len(members) == 1 && runner.Environment(e.Environment).Valid() {
			env = e.Environment
		}
		for _, mem := range members {
			if len(out) >= maxResults {
				return nil, errResults("the selection %s holds more than %d contracts", p, maxResults)
			}
			out = append(out, selectedContract{member: mem, env: env})
		}
	}
	return out, nil
}

// readMatrixFile reads a matrix nova matrix --selection wrote.
func readMatrixFile(p string) (matrix, error) {
	f, err := os.Open(p)
	if err != nil {
		return matrix{}, errResults("opening the selection: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSelectionBytes+1))
	if err != nil {
		return matrix{}, errResults("reading the selection %s: %w", p, err)
	}
	if len(b) > maxSelectionBytes {
		return matrix{}, errResults("the selection %s is larger than %d bytes", p, maxSelectionBytes)
	}
	var m matrix
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, errResults("%s is not a matrix nova matrix writes: %v", p, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return m, errResults("%s holds more than one JSON document", p)
	}
	return m, nil
}

// missingResults checks the results against the selection: a result of
// a contract the selection does not hold is refused (the jobs ran only
// what it holds), and each selected contract with no result becomes a
// result saying so.
func missingResults(sel []selectedContract, results []fanoutResult) ([]fanoutResult, error) {
	ids, paths := map[string]bool{}, map[string]bool{}
	for _, c := range sel {
		if c.member.ID != "" {
			ids[c.member.ID] = true
		}
		paths[c.member.Path] = true
	}
	hasID, hasPath := map[string]bool{}, map[string]bool{}
	for _, r := range results {
		if !ids[r.ID] && !paths[r.Path] {
			return nil, errResults("a result of contract %q (%s): the selection holds no such contract", r.ID, r.Path)
		}
		hasID[r.ID], hasPath[r.Path] = true, true
	}
	var missing []fanoutResult
	for _, c := range sel {
		if (c.member.ID != "" && hasID[c.member.ID]) || hasPath[c.member.Path] {
			continue
		}
		id := c.member.ID
		if id == "" {
			// A contract the selection could not read the id of: its
			// file names it.
			id = c.member.Path
		}
		missing = append(missing, fanoutResult{
			ID: id, Path: c.member.Path, Environment: cmp.Or(c.env, unknownEnvironment), Verdict: verdictNoResult,
			Reason: string(runner.FanoutResultMissing), Detail: "no result: its job of the fan-out failed before writing one, or did not run (see the workflow run)",
		})
	}
	return missing, nil
}

// statusDescription is what statusLine writes, read back for a row: the
// command, the verdict, the plan digest's prefix and the reason. A description of another shape
// (a status set by hand, by an older nova) gives its state alone.
var statusDescription = regexp.MustCompile(`^nova (validate|explain|plan|run): (pass|fail|awaiting_approval|error)(?:, plan ([0-9a-f]{32,128}))?(?: \((?:applied before; nothing to do|not applied yet)\))?(?: \(([A-Z][A-Z0-9_]{0,63})\))?$`)

// stateVerdicts is the verdict a commit status's state stands for, where
// its description does not say (commitState's inverse, but for a pass not
// applied yet, which reads as waiting).
var stateVerdicts = map[runner.CommitState]runner.Verdict{
	runner.StateSuccess: runner.Pass, runner.StatePending: runner.AwaitingApproval,
	runner.StateFailure: runner.Fail, runner.StateError: runner.Errored,
}

// statusResults are the results of the selected contracts as the jobs of
// the fan-out set them in the commit's statuses (`nova/<id>/<env>`): the
// channel on a forge whose jobs cannot pass files (Gitea's runners
// without an artifact action). A status is the latest its context has,
// so a job run again replaces it. Statuses of contracts the selection
// does not hold are other workflows' and are left out.
func statusResults(ctx context.Context, lister runner.StatusLister, commit string, sel []selectedContract) (string, []fanoutResult, error) {
	all, err := lister.ListStatuses(ctx, commit)
	if err != nil {
		return "", nil, runner.Errorf(runner.ForgeAPIFailed, "reading the statuses of %s: %w", commit, err)
	}
	paths := map[string]string{}
	for _, c := range sel {
		if c.member.ID != "" {
			paths[c.member.ID] = c.member.Path
		}
	}
	var (
		command string
		out     []fanoutResult
		seen    = map[string]bool{}
	)
	for _, st := range all {
		rest, ok := strings.CutPrefix(st.Context, "nova/")
		i := strings.LastIndexByte(rest, '/')
		if !ok || i < 0 {
			continue
		}
		id, env := rest[:i], rest[i+1:]
		if _, selected := paths[id]; !selected || !runner.Environment(env).Valid() || seen[st.Context] {
			continue
		}
		// The listers give each context's newest status alone; a second
		// one would be a forge's answer to distrust, not to count twice.
		seen[st.Context] = true
		r := fanoutResult{ID: id, Path: paths[id], Environment: env, Command: "run"}
		if m := statusDescription.FindStringSubmatch(st.Description); m != nil {
			r.Command, r.Verdict, r.Digest, r.Reason = m[1], m[2], m[3], m[4]
		} else if v, known := stateVerdicts[st.State]; known {
			r.Verdict = string(v)
		} else {
			continue
		}
		command = cmp.Or(command, r.Command)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b fanoutResult) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Environment, b.Environment))
	})
	return command, out, nil
}

// summaryCommand posts one summary per pull request and environment for
// the contracts every job of a sharded fan-out ran, from the results
// files under --from, and marks out of date the comments they stand for.
// With --selection, each selected contract without a result is a row
// saying so, and the command fails. It reads no secret but the forge's
// token and runs nothing of the change.
func summaryCommand(ctx context.Context, cfg Config, env Env) error {
	var sel []selectedContract
	if cfg.SelectionFile != "" {
		var err error
		if sel, err = readSelection(cfg.SelectionFile); err != nil {
			return failed(env, cfg, err)
		}
	}
	var (
		command string
		results []fanoutResult
		forge   *forgeAdapters
		err     error
	)
	if cfg.FromStatuses {
		if forge, err = connectForge(ctx, cfg); err == nil && forge.statusLister == nil {
			err = runner.Errorf(runner.ConfigInvalid, "nova summary --statuses reads the commit's statuses from the forge: this run has none")
		}
		if err == nil {
			commit := firstNonEmpty(env.Getenv("NOVA_COMMIT"), cfg.ForgeAPI.HeadSHA)
			if !commitHex().MatchString(commit) {
				err = runner.Errorf(runner.ConfigInvalid, "nova summary --statuses reads the statuses of the pull request's head: the event names none and NOVA_COMMIT is %q", commit)
			} else {
				command, results, err = statusResults(ctx, forge.statusLister, commit, sel)
			}
		}
	} else {
		command, results, err = readResults(cfg.ResultsFrom, cfg.SelectionFile != "")
	}
	if err != nil {
		return failed(env, cfg, err)
	}
	var missing []fanoutResult
	if cfg.SelectionFile != "" {
		if missing, err = missingResults(sel, results); err != nil {
			return failed(env, cfg, err)
		}
	}
	if forge == nil {
		if forge, err = connectForge(ctx, cfg); err != nil {
			return failed(env, cfg, err)
		}
	}
	if forge.thread == nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "nova summary posts on a pull request: this run is about none"))
	}
	found := len(results)
	results = append(results, missing...)
	views := make([]runView, len(results))
	paths := map[string]string{}
	groups := map[string]string{}
	for i, r := range results {
		views[i] = r.view()
		paths[r.ID] = r.Path
		if r.Group != "" && groups[r.Environment] == "" {
			groups[r.Environment] = r.Group
		}
	}
	// With no result at all, the command the jobs ran is unknown.
	cfg.Command = cmp.Or(command, "fan-out")
	var warn bytes.Buffer
	publishSummaries(ctx, cfg, forge, views, paths, fanoutKey, groups, io.MultiWriter(env.Stderr, &warn))
	from := cfg.ResultsFrom
	if cfg.FromStatuses {
		from = "the commit's statuses"
	}
	fmt.Fprintf(env.Stdout, "nova summary: %d result(s) of nova %s from %s\n", found, cfg.Command, from)
	for _, m := range missing {
		fmt.Fprintf(env.Stdout, "nova summary: %s %s (%s): no result\n", runner.FanoutResultMissing, m.Path, m.ID)
	}
	if warn.Len() > 0 {
		return runner.Errorf(runner.ForgeAPIFailed, "the summaries were not all posted")
	}
	if len(missing) > 0 {
		return failed(env, cfg, runner.Errorf(runner.FanoutResultMissing, "%d of the %d selected contract(s) have no result: their jobs failed before writing one, or did not run", len(missing), len(sel)))
	}
	return nil
}
