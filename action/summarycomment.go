package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/templates"
)

// summaryThreshold is how many contracts a job reports in their own
// comments; past it, one summary per environment stands for them all
// (summary comments), each contract's detail goes to a check run
// (GitHub) or the page its commit status links (the run, on Gitea), and
// the pull request stays readable and within the forge's limits.
const summaryThreshold = 10

// summarize reports whether a job of n contracts reports them in summary
// comments.
func summarize(n int) bool { return n > summaryThreshold }

// summaryMarker finds one part of one summary again: the environment, the
// job's key (its first contract's id, so each shard of a fanned-out
// change keeps its own summary), and the part's number.
func summaryMarker(env, key string, part int) string {
	return fmt.Sprintf("%s part=%d -->", summaryPrefix(env, key), part)
}

// summaryPrefix is what every part of one summary starts with.
func summaryPrefix(env, key string) string {
	return fmt.Sprintf("%ssummary env=%s key=%s", runner.CommentPrefix, markerValue(env), markerValue(key))
}

// summaryEnvPrefix is what every summary of env starts with, whatever job
// posted it.
func summaryEnvPrefix(env string) string {
	return fmt.Sprintf("%ssummary env=%s key=", runner.CommentPrefix, markerValue(env))
}

type summaryData struct {
	Marker, Command, Environment string
	Count, Part, Parts           int
	Tally                        string
	Rows                         []summaryRow
	Details                      []summaryDetail
	Where, RunURL                string
}

// summaryRow is one contract: every value from the change escaped.
type summaryRow struct{ Path, ID, Icon, Verdict, Digest, WaitsOn string }

type summaryDetail struct{ Path, Reason, Text string }

// maxDetailText bounds one contract's line in the collapsed details: the
// whole report is in its check run or the run.
const maxDetailText = 300

// summaryRows turns the views of one environment into rows, ordered by
// contract path, and the details of those that did not pass.
func summaryRows(views []runView, paths map[string]string, group string) ([]summaryRow, []*summaryDetail) {
	esc := templates.EscapeMarkdown
	rows := make([]summaryRow, len(views))
	details := make([]*summaryDetail, len(views))
	for i, v := range views {
		p := paths[v.ContractID]
		row := summaryRow{Path: esc(p), ID: esc(v.ContractID), Icon: verdictIcon(v.Verdict), Verdict: esc(strings.ReplaceAll(v.Verdict, "_", " ")), WaitsOn: "—"}
		if v.PlanDigest != "" {
			row.Digest = esc(runner.ShortDigest(v.PlanDigest))
		}
		switch {
		case waitsForApproval(v) && group != "":
			row.WaitsOn = "approval by **" + esc(group) + "**"
		case waitsForApproval(v):
			row.WaitsOn = "approval"
		case v.Reason != "":
			row.WaitsOn = "`" + esc(v.Reason) + "`"
		}
		rows[i] = row
		if waitsForApproval(v) && len(v.PlanDigest) >= runner.MinDigestPrefix && runner.Environment(v.Environment).Valid() {
			// The whole digest, as a contract's own comment gives it: the
			// summary's prefix is too short to approve by.
			details[i] = &summaryDetail{Path: esc(p), Reason: "approve with",
				Text: "`/nova approve " + v.Environment + " " + v.PlanDigest + "`"}
			continue
		}
		if v.Verdict != string(runner.Pass) {
			text := ""
			for _, s := range v.Stages {
				if s.Verdict != runner.Pass && len(s.Findings) > 0 {
					text = oneLine(s.Findings[0].Message)
					break
				}
			}
			if r := []rune(text); len(r) > maxDetailText {
				text = string(r[:maxDetailText-1]) + "…"
			}
			details[i] = &summaryDetail{Path: esc(p), Reason: esc(firstNonEmpty(v.Reason, v.Verdict)), Text: esc(text)}
		}
	}
	return rows, details
}

// renderSummary renders the summary of one environment's contracts in as
// many parts as the forge's comment size needs, each under maxComment
// characters and each with its own marker.
func renderSummary(command, env, key string, views []runView, paths map[string]string, group, where, runURL string) ([]string, error) {
	rows, details := summaryRows(views, paths, group)
	tally := summaryTally(views)
	render := func(part, parts, from, to int) (string, error) {
		d := summaryData{
			Marker: summaryMarker(env, key, part), Command: command, Environment: templates.EscapeMarkdown(env),
			Count: len(views), Part: part, Parts: parts, Tally: tally, Rows: rows[from:to], Where: where, RunURL: runURL,
		}
		for _, det := range details[from:to] {
			if det != nil {
				d.Details = append(d.Details, *det)
			}
		}
		var b bytes.Buffer
		if err := templates.PRSummary().Execute(&b, d); err != nil {
			return "", fmt.Errorf("rendering the pull request summary: %w", err)
		}
		return b.String(), nil
	}
	// Split where the rows run out of room. A part's size is known only
	// once rendered, so rows are added while the part fits; the part count
	// in the headings is settled by rendering again.
	var bounds [][2]int
	for from := 0; from < len(rows); {
		// A part has a row at least; rows are added while it fits, in
		// steps that halve when one would not.
		to := from + 1
		for step := 64; to < len(rows) && step >= 1; {
			next := min(to+step, len(rows))
			body, err := render(1, 99, from, next)
			if err != nil {
				return nil, err
			}
			if utf8.RuneCountInString(body) <= maxComment {
				to = next
			} else {
				step /= 2
			}
		}
		bounds = append(bounds, [2]int{from, to})
		from = to
	}
	parts := make([]string, len(bounds))
	for i, b := range bounds {
		body, err := render(i+1, len(bounds), b[0], b[1])
		if err != nil {
			return nil, err
		}
		if utf8.RuneCountInString(body) > maxComment {
			// One row longer than a comment (an id cannot be): cut it.
			body = string([]rune(body)[:maxComment-200]) + "\n\n*… cut to fit.*\n"
		}
		parts[i] = body
	}
	return parts, nil
}

// summaryTally counts the verdicts: "✅ 990 pass · ⏳ 8 awaiting approval".
func summaryTally(views []runView) string {
	counts := map[string]int{}
	for _, v := range views {
		counts[v.Verdict]++
	}
	var order []string
	for _, v := range []runner.Verdict{runner.Fail, runner.Errored, runner.AwaitingApproval, runner.Pass} {
		order = append(order, string(v))
	}
	for v := range counts {
		if !slices.Contains(order, v) {
			order = append(order, v)
		}
	}
	var out []string
	for _, v := range order {
		if n := counts[v]; n > 0 {
			out = append(out, fmt.Sprintf("%s %d %s", verdictIcon(v), n, templates.EscapeMarkdown(strings.ReplaceAll(v, "_", " "))))
		}
	}
	return strings.Join(out, " · ")
}

// publishSummaries keeps one summary per environment on the pull request
// for the contracts this job ran, in parts, and marks out of date what
// they stand for now: the per-contract comments of these contracts, the
// parts the summary no longer needs, and other jobs' earlier summaries
// that listed any of these contracts (a change whose contracts were
// sharded differently). Only comments the forge says a bot posted are
// marked: a person's stay as they are.
//
// key names the summaries: "" for a job's own (its first contract's id),
// fanoutKey for the one a fan-out's summary job posts for every shard.
// groups, when not nil, are the approver groups by environment, read by
// the jobs that ran the contracts.
func publishSummaries(ctx context.Context, cfg Config, forge *forgeAdapters, views []runView, paths map[string]string, key string, groups map[string]string, warn io.Writer) {
	if forge == nil || forge.thread == nil {
		return
	}
	byEnv := map[string][]runView{}
	for _, v := range views {
		if v.ContractID != "" && v.Environment != "" {
			byEnv[v.Environment] = append(byEnv[v.Environment], v)
		}
	}
	envs := make([]string, 0, len(byEnv))
	for env := range byEnv {
		envs = append(envs, env)
	}
	slices.Sort(envs)
	where := "in the page its commit status links"
	if forge.checks != nil {
		where = "in its check run (`nova/<id>/<environment>`)"
	}
	runURL := runURL(cfg.Forge, cfg.ForgeAPI)
	for _, env := range envs {
		vs := byEnv[env]
		slices.SortFunc(vs, func(a, b runView) int { return strings.Compare(paths[a.ContractID], paths[b.ContractID]) })
		group := groups[env]
		if groups == nil && forge.approvers != nil && slices.ContainsFunc(vs, waitsForApproval) {
			if ac, err := forge.approvers.Approvers(ctx); err == nil {
				group = ac.GroupFor(runner.Environment(env))
			}
		}
		k := key
		if k == "" {
			k = vs[0].ContractID
		}
		parts, err := renderSummary(cfg.Command, env, k, vs, paths, group, where, runURL)
		if err == nil {
			for i, body := range parts {
				if err = runner.KeepComment(ctx, forge.thread, summaryMarker(env, k, i+1), body); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = supersedeStale(ctx, forge.thread, env, k, len(parts), vs)
		}
		if err != nil {
			fmt.Fprintf(warn, "nova: could not update the pull request's summary of %s: %v\n", env, err)
		}
	}
}

// supersedeStale marks out of date the comments a summary now stands for.
func supersedeStale(ctx context.Context, thread runner.CommentThread, env, key string, parts int, vs []runView) error {
	all, err := thread.Comments(ctx)
	if err != nil {
		return err
	}
	own := summaryPrefix(env, key) + " part="
	ids := make([]string, len(vs))
	for i, v := range vs {
		ids[i] = v.ContractID
	}
	listsOurs := func(body string) bool {
		return slices.ContainsFunc(ids, func(id string) bool {
			return strings.Contains(body, "<code>"+templates.EscapeMarkdown(id)+"</code>")
		})
	}
	for _, c := range all {
		if !c.Bot {
			continue
		}
		stale := false
		switch {
		case strings.HasPrefix(c.Body, own):
			var n int
			if _, err := fmt.Sscanf(strings.TrimPrefix(c.Body, own), "%d -->", &n); err == nil && n > parts {
				stale = true
			}
		case strings.HasPrefix(c.Body, summaryEnvPrefix(env)):
			stale = listsOurs(c.Body)
		default:
			stale = slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(c.Body, commentMarker(id, env)) })
		}
		if stale {
			if err := runner.Supersede(ctx, thread, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// contractPaths maps the id of each contract a job ran to its file, as
// the rows show it; views[i] is the run of sel.Contracts[i].
func contractPaths(sel monorepo.Selection, views []runView) map[string]string {
	out := map[string]string{}
	for i, v := range views {
		if v.ContractID != "" && i < len(sel.Contracts) {
			out[v.ContractID] = sel.Contracts[i].Contract.Path()
		}
	}
	return out
}
