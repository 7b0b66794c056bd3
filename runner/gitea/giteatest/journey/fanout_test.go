package journey_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner/gitea/giteatest/actrunner"
)

// fanoutContracts is more than the summary threshold (10), so the
// fan-out reports the change in one summary per environment, and
// fanoutJobs fewer, so it is sharded over several jobs.
const (
	fanoutContracts = 11
	fanoutJobs      = 3
)

// TestJourneyFanout is the fan-out of issue 35 on a real Gitea 1.23.8:
// the operator scaffolds acme/app's fan-out with `nova init --forge gitea
// --fanout --max-jobs 3` and pushes 11 dev contracts (examples/hello's,
// real Terraform, local state); dev-author's pull request changes all of
// them. Gitea starts the run from the pull request's event, and it runs
// the selection in 3 fixed jobs and a summary job. Then: every job ran
// and passed, each contract has its success status on the head, the pull
// request has one summary comment for dev listing all 11 and no comment
// per contract, and the evidence verifies.
func TestJourneyFanout(t *testing.T) {
	j := startJourney(t)
	defer j.finish()

	clone := filepath.Join(t.TempDir(), app)
	j.git("", "clone", "-q", j.srv.URL+"/"+org+"/"+app+".git", clone)
	if out, err := j.novaCmd(clone, nil, "init", "--forge", "gitea", "--fanout", "--max-jobs", fmt.Sprint(fanoutJobs), "--nova-url", j.release, "--nova-sha256", j.sum); err != nil {
		t.Fatalf("nova init --fanout: %v\n%s", err, out)
	}
	workflow := ".gitea/workflows/nova-fanout.yml"
	files := map[string]string{workflow: readFile(t, filepath.Join(clone, filepath.FromSlash(workflow)))}
	hello := filepath.Join(j.root, "examples", "hello")
	contract := readFile(t, filepath.Join(hello, ".nova", "contract.yml"))
	ids := make([]string, fanoutContracts)
	for i := range ids {
		ids[i] = fmt.Sprintf("3b0c6f5e-8a41-4e8f-9d2a-%012d", i)
		dir := fmt.Sprintf("svc/%02d/", i)
		files[dir+".nova/contract.yml"] = regexp.MustCompile(`(?m)^id: .*$`).ReplaceAllString(contract, "id: "+ids[i])
		files[dir+".nova/approvers.yml"] = "groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-oncall]\nkeys: {}\n"
		for _, r := range []string{"unit.xml", "e2e.xml", "load.xml"} {
			files[dir+"reports/"+r] = readFile(t, filepath.Join(hello, "reports", r))
		}
	}
	j.srv.CommitFiles(t, org, app, "main", "main", files, j.ops)
	j.setSecrets()

	changed := map[string]string{}
	for i := range ids {
		p := fmt.Sprintf("svc/%02d/.nova/contract.yml", i)
		changed[p] = strings.Replace(files[p], "audience: Nova", "audience: Nova and friends", 1)
	}
	j.head = j.signedCommit(j.dev, "greeting", "main", changed)
	j.pull = j.srv.CreatePullRequest(t, org, app, "greeting", "main", "Greet friends too, everywhere", j.dev)

	// The run's jobs: select, the 3 fixed jobs, the summary.
	const jobs = 1 + fanoutJobs + 1
	before := j.events()
	tasks := j.runner.Await(t, org, app, "the fan-out's jobs", func(tasks []actrunner.Task) bool {
		n := 0
		for _, task := range tasks {
			if task.Event == "pull_request_target" {
				n++
			}
		}
		return n >= jobs && actrunner.AllDone(tasks)
	})
	var names []string
	for _, task := range tasks {
		t.Logf("%s %s", task.Name, task)
		names = append(names, task.Name)
		if task.Status != "success" {
			t.Errorf("%s: %s, want success\n%s", task.Name, task.Status, tail(j.runner.Log(t, org, app, task), 60))
		}
		j.seen = max(j.seen, task.ID)
	}
	for n := 1; n <= fanoutJobs; n++ {
		if want := fmt.Sprintf("job %d of %d", n, fanoutJobs); !slices.Contains(names, want) {
			t.Errorf("no %q among the run's jobs %q", want, names)
		}
	}
	if len(tasks) != jobs {
		t.Errorf("the pull request started %d jobs, want %d: %q", len(tasks), jobs, names)
	}
	j.jobs = append(j.jobs, job{what: "the fan-out", task: tasks[len(tasks)-1], events: j.events() - before})

	var combined struct {
		Statuses []struct {
			Context string `json:"context"`
			Status  string `json:"status"`
		} `json:"statuses"`
	}
	j.srv.API(t, j.srv.AdminToken, http.MethodGet, "/repos/"+org+"/"+app+"/commits/"+j.head+"/status?limit=50", nil, &combined)
	statuses := map[string]string{}
	for _, s := range combined.Statuses {
		statuses[s.Context] = s.Status
	}
	for _, id := range ids {
		if got := statuses["nova/"+id+"/dev"]; got != "success" {
			t.Errorf("the status of %s in dev is %q, want success (all: %v)", id, got, statuses)
		}
	}

	var summaries, others []string
	for _, c := range j.comments() {
		switch {
		case j.byPerson(c):
		case strings.HasPrefix(c.Body, "<!-- nova:summary env=dev key=fanout part=1 -->"):
			summaries = append(summaries, c.Body)
		default:
			others = append(others, head(c.Body, 3))
		}
	}
	if len(summaries) != 1 || len(others) != 0 {
		t.Fatalf("nova's comments: %d summaries of dev and %d others %q, want one summary alone", len(summaries), len(others), others)
	}
	for _, id := range ids {
		if !strings.Contains(strings.ReplaceAll(summaries[0], `\`, ""), "<code>"+id+"</code>") {
			t.Errorf("dev's summary has no row for %s:\n%s", id, summaries[0])
		}
	}
	j.verifyEvidence()
}
