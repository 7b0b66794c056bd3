package journey_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/gitea/giteatest"
	"github.com/nova-platform/nova/runner/gitea/giteatest/actrunner"
)

const (
	org = "acme"
	app = "app"
	// maxEventsPerRerun is the "Done when" bound on what a job writes when
	// it runs again after every environment applied the change.
	maxEventsPerRerun = 15
	// awaitRun bounds the wait for one workflow run: nova plans and
	// applies up to four environments in it, on two shared cores.
	awaitRun = 15 * time.Minute
)

var environments = []string{"dev", "qa", "prod", "dr"}

// TestJourney is the journey of issue 32 as an operator lives it on a real
// Gitea 1.23.8, every workflow run created by Gitea from a real event and
// executed by the test runner:
//
//  1. the operator scaffolds acme/app with `nova init --forge gitea` (nova
//     fetched by URL and sha256 from a local release server), fills in the
//     contract and approvers as the scaffold's comments say, sets the
//     variable and secrets the workflow's header lists, and pushes to main;
//  2. dev-author opens a pull request changing the contract: dev applies,
//     qa waits;
//  3. qa-lead approves by review: qa applies, prod waits;
//  4. dev-author (the author) and qa-lead (qa's approver: separation of
//     duties) comment `/nova approve prod <digest>`: both refused, each
//     named in nova's comment;
//  5. sre-oncall comments the same: prod applies, dr waits;
//  6. sre-oncall approves dr by comment: dr applies;
//  7. all four statuses are success on the head, `nova evidence verify`
//     over the Gitea URL passes, Gitea shows every evidence commit
//     verified, and a re-run (sre-oncall's approving review) writes at
//     most 15 events and asks nobody for anything.
//
// It logs the evidence events each job wrote (the closing note's "events
// per job and jobs per journey"), and on failure dumps every run's nova
// output, the pull request's comments and the head's statuses.
func TestJourney(t *testing.T) {
	j := startJourney(t)
	// Deferred, not a cleanup: the forge is read with the test's context,
	// which ends before cleanups run.
	defer j.finish()

	j.scaffold()
	j.reachDR(true)
	all := map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "success"}
	j.verifyEvidence()

	// Not a comment review: to Gitea 1.23 that is not a submitted review,
	// so the scaffold's `types: [submitted]` starts nothing for it
	// (actrunner's TestGiteaEventFacts).
	rerun := j.step("a re-run after everything applied (sre-oncall's approving review)", "pull_request_review", func() {
		j.review(j.sre, "all environments look right")
	})
	j.wantStatuses("after the re-run", all)
	if rerun.events > maxEventsPerRerun {
		t.Errorf("the re-run wrote %d evidence events, want at most %d", rerun.events, maxEventsPerRerun)
	}
	if want := "dev:0 qa:0 prod:0 dr:0"; rerun.exits != want {
		t.Errorf("the re-run's nova exits %q, want %q: nobody is asked for anything", rerun.exits, want)
	}
}

// reachDR is steps 2 to 6 of TestJourney on a scaffolded repository:
// dev-author's pull request changes the contract, and it applies in dev,
// qa (qa-lead's review), prod (sre-oncall's comment, after the author's
// and qa-lead's are refused, when refusals asks for them) and dr.
func (j *journey) reachDR(refusals bool) {
	t := j.t
	t.Helper()
	_, prodDigest := j.reachProd()

	for _, refused := range []struct {
		who giteatest.User
		why string
	}{
		{j.dev, "the pull request's author"},
		{j.qa, "qa's approver of the same change (separation of duties)"},
	} {
		if !refusals {
			break
		}
		j.step(refused.who.Name+"'s /nova approve prod", "issue_comment", func() { j.comment(refused.who, "/nova approve prod "+prodDigest) })
		j.wantStatuses("after "+refused.who.Name+" ("+refused.why+") approved prod", map[string]string{"dev": "success", "qa": "success", "prod": "pending"})
		// Names are Markdown-escaped in the comment (dev\-author); what a
		// reader sees has no backslashes.
		if c := j.novaComment("prod"); !strings.Contains(strings.ReplaceAll(c, `\`, ""), refused.who.Name) {
			t.Errorf("nova's prod comment does not say that %s's approval (%s) was refused:\n%s", refused.who.Name, refused.why, c)
		}
	}

	j.step("sre-oncall's /nova approve prod", "issue_comment", func() { j.comment(j.sre, "/nova approve prod "+prodDigest) })
	j.wantStatuses("after sre-oncall approved prod", map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "pending"})
	drDigest := j.approveCommand("dr")

	j.step("sre-oncall's /nova approve dr", "issue_comment", func() { j.comment(j.sre, "/nova approve dr "+drDigest) })
	j.wantStatuses("after sre-oncall approved dr", map[string]string{"dev": "success", "qa": "success", "prod": "success", "dr": "success"})
}

// reachProd is steps 2 and 3 of TestJourney on a scaffolded repository:
// dev-author's pull request applies in dev, and in qa after qa-lead's
// review; prod waits. It returns the review's run and the digest prod's
// approvers are asked to approve.
func (j *journey) reachProd() (job, string) {
	t := j.t
	t.Helper()
	j.step("the pull request opened", "pull_request_target", j.openPullRequest)
	j.wantStatuses("after the pull request opened", map[string]string{"dev": "success", "qa": "pending"})
	qaDigest := j.approveCommand("qa")

	reviewed := j.step("qa-lead's approving review", "pull_request_review", func() {
		j.review(j.qa, "qa checked it")
	})
	j.wantStatuses("after qa-lead's review", map[string]string{"dev": "success", "qa": "success", "prod": "pending"})
	prodDigest := j.approveCommand("prod")
	if prodDigest == qaDigest {
		t.Errorf("prod asks for the approval of qa's plan %s", qaDigest)
	}
	return reviewed, prodDigest
}

// journey is the forge, the people and what happened so far.
type journey struct {
	t *testing.T
	// lastDone is when the last step's runs had all finished: after every
	// event they recorded.
	lastDone time.Time
	srv      *giteatest.Server
	runner   *actrunner.Runner
	root     string // this repository
	nova     string // the nova binary under test
	// release serves nova for the workflow's "fetch nova" step.
	release, sum string
	// the operator (site admin), the pull request's author, qa's and sre's
	// approvers (sre-lead is the second that prod's and dr's destroys ask
	// for), and the evidence bot.
	ops, dev, qa, sre, sre2, bot giteatest.User
	// approverKeys are the public keys scaffold registers under keys: in
	// approvers.yml, by approver: what a local `nova approve` signs with.
	approverKeys map[string]string
	// breakglass are the members scaffold puts in approvers.yml's
	// breakglass group; none means the scaffold's commented-out example.
	breakglass []string
	// eventKey and commitKey sign events and evidence commits; the public
	// halves verify them.
	eventKey, eventPub, commitKey, commitPub string
	// evidence is a bare clone of acme/evidence, fetched to count events.
	evidence string
	pull     int
	head     string
	seen     int64 // the newest task already attributed to a step
	jobs     []job
}

// job is one step's workflow run: what started it, the task Gitea shows,
// the evidence events it wrote and nova's exit code per environment.
type job struct {
	what   string
	task   actrunner.Task
	events int
	exits  string
}

// startJourney is newJourney once the tools the workflow's steps run on
// this machine are known to be there: a missing one fails the test.
func startJourney(t *testing.T, opts ...giteatest.Option) *journey {
	for _, tool := range []string{"terraform", "git", "curl", "sha256sum", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH, and the workflow's steps run it on this machine: %v (make tools puts the tools first on PATH)", tool, err)
		}
	}
	return newJourney(t, opts...)
}

// finish logs the events each job wrote and, when the test failed, dumps
// every run's nova output, the comments and the statuses.
func (j *journey) finish() {
	if j.t.Failed() {
		j.dump()
	}
	j.note()
}

func newJourney(t *testing.T, opts ...giteatest.Option) *journey {
	j := &journey{t: t, root: repoRoot(t)}
	j.nova = buildNova(t, j.root)
	bin, err := os.ReadFile(j.nova)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	j.sum = hex.EncodeToString(sum[:])
	release := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/nova-linux-amd64" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(bin)
	}))
	t.Cleanup(release.Close)
	j.release = release.URL + "/nova-linux-amd64"

	j.srv = giteatest.Start(t, opts...)
	j.runner = actrunner.Start(t, j.srv, actrunner.WithAwait(awaitRun))
	s := j.srv
	j.ops = s.Admin()
	s.CreateOrg(t, org)
	j.dev, j.qa, j.sre, j.bot = s.CreateUser(t, "dev-author"), s.CreateUser(t, "qa-lead"), s.CreateUser(t, "sre-oncall"), s.CreateUser(t, "nova-bot")
	j.sre2 = s.CreateUser(t, "sre-lead")
	s.CreateTeam(t, org, "writers", "write", j.dev.Name, j.qa.Name, j.sre.Name, j.sre2.Name, j.bot.Name)
	s.CreateRepo(t, org, app)
	s.API(t, s.AdminToken, http.MethodPost, "/admin/users/"+org+"/repos", map[string]any{"name": "evidence", "auto_init": false, "private": false}, nil)
	j.newKeys()
	// Gitea shows the bot's evidence commits as verified once it knows the
	// key, whose identity is the bot's email.
	s.API(t, j.bot.Token, http.MethodPost, "/user/gpg_keys", map[string]string{"armored_public_key": j.commitPub}, nil)
	j.evidence = t.TempDir()
	j.git("", "init", "-q", "--bare", j.evidence)
	return j
}

// newKeys makes the keys an operator would: a cosign-format event key and
// an OpenPGP key for the bot's evidence commits.
func (j *journey) newKeys() {
	t := j.t
	dir := t.TempDir()
	if _, err := signing.LocalSigner(dir); err != nil {
		t.Fatal(err)
	}
	j.eventKey, j.eventPub = readFile(t, filepath.Join(dir, "signing.key")), readFile(t, signing.LocalSigningPublicKey(dir))
	e, err := openpgp.NewEntity("Nova evidence", "", j.bot.Email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	j.commitKey = armoredKey(t, openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivate(w, nil) })
	j.commitPub = armoredKey(t, openpgp.PublicKeyType, e.Serialize)
}

// scaffold is the operator's part: nova init in a clone of acme/app, the
// scaffold filled in as its comments ask (examples/hello's contract under
// the scaffold's id, its test reports, approvers), pushed to main; then
// the variable and secrets the workflow's header lists.
func (j *journey) scaffold(initArgs ...string) {
	t, s := j.t, j.srv
	clone := filepath.Join(t.TempDir(), app)
	j.git("", "clone", "-q", s.URL+"/"+org+"/"+app+".git", clone)
	args := append([]string{"init", "--forge", "gitea", "--nova-url", j.release, "--nova-sha256", j.sum}, initArgs...)
	if out, err := j.novaCmd(clone, nil, args...); err != nil {
		t.Fatalf("nova init: %v\n%s", err, out)
	}
	files := map[string]string{}
	err := filepath.WalkDir(clone, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(clone, p)
		files[filepath.ToSlash(rel)] = readFile(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	workflow := ".gitea/workflows/nova-" + app + ".yml"
	for _, name := range []string{".nova/contract.yml", ".nova/approvers.yml", workflow} {
		if _, ok := files[name]; !ok {
			t.Fatalf("nova init wrote no %s; it wrote %v", name, slices.Sorted(maps.Keys(files)))
		}
	}
	if !strings.Contains(files[workflow], j.release) || !strings.Contains(files[workflow], j.sum) {
		t.Fatalf("the scaffolded workflow does not fetch nova from %s with its sha256:\n%s", j.release, files[workflow])
	}
	id := regexp.MustCompile(`(?m)^id: .*$`).FindString(files[".nova/contract.yml"])
	hello := filepath.Join(j.root, "examples", "hello")
	contract := regexp.MustCompile(`(?m)^id: .*$`).ReplaceAllString(readFile(t, filepath.Join(hello, ".nova", "contract.yml")), id)
	if id == "" || !strings.Contains(contract, id) {
		t.Fatalf("no id line in the scaffolded contract to keep:\n%s", files[".nova/contract.yml"])
	}
	files[".nova/contract.yml"] = contract
	approvers := files[".nova/approvers.yml"]
	approvers = strings.Replace(approvers, "  qa:\n    members: []", "  qa:\n    members: [qa-lead]", 1)
	approvers = strings.Replace(approvers, "  sre:\n    members: []", "  sre:\n    members: [sre-oncall, sre-lead, qa-lead]", 1)
	if !strings.Contains(approvers, "[qa-lead]") || !strings.Contains(approvers, "[sre-oncall, sre-lead, qa-lead]") {
		t.Fatalf("the scaffolded approvers.yml has no empty qa and sre groups to fill:\n%s", files[".nova/approvers.yml"])
	}
	if len(j.breakglass) > 0 {
		example := "  # breakglass:\n  #   members: [oncall-lead, platform-lead]\n"
		if !strings.Contains(approvers, example) {
			t.Fatalf("the scaffolded approvers.yml has no commented-out breakglass group to fill:\n%s", approvers)
		}
		approvers = strings.Replace(approvers, example, "  breakglass:\n    members: ["+strings.Join(j.breakglass, ", ")+"]\n", 1)
	}
	if len(j.approverKeys) > 0 {
		keys := "keys:\n"
		for _, who := range slices.Sorted(maps.Keys(j.approverKeys)) {
			keys += "  " + who + ": |\n    " + strings.ReplaceAll(strings.TrimSpace(j.approverKeys[who]), "\n", "\n    ") + "\n"
		}
		if !strings.Contains(approvers, "\nkeys: {}\n") {
			t.Fatalf("the scaffolded approvers.yml has no empty keys: to fill:\n%s", approvers)
		}
		approvers = strings.Replace(approvers, "\nkeys: {}\n", "\n"+keys, 1)
	}
	files[".nova/approvers.yml"] = approvers
	for _, r := range []string{"unit.xml", "e2e.xml", "load.xml"} {
		files["reports/"+r] = readFile(t, filepath.Join(hello, "reports", r))
	}
	s.CommitFiles(t, org, app, "main", "main", files, j.ops)
	j.setSecrets()
}

// setSecrets sets the variable and secrets the workflows' headers list.
func (j *journey) setSecrets() {
	t, s := j.t, j.srv
	s.API(t, s.AdminToken, http.MethodPost, "/repos/"+org+"/"+app+"/actions/variables/NOVA_EVIDENCE_REPO", map[string]string{"value": s.URL + "/" + org + "/evidence.git"}, nil)
	for name, v := range map[string]string{"NOVA_EVIDENCE_TOKEN": j.bot.Token, "NOVA_SIGNING_KEY": j.eventKey, "NOVA_COMMIT_KEY": j.commitKey} {
		s.API(t, s.AdminToken, http.MethodPut, "/repos/"+org+"/"+app+"/actions/secrets/"+name, map[string]string{"data": v}, nil)
	}
}

// openPullRequest is dev-author's change: examples/hello's audience
// widened, on a branch, as a pull request.
func (j *journey) openPullRequest() {
	j.pullRequest("greeting", "Greet friends too", "audience: Nova", "audience: Nova and friends")
}

// pullRequest is dev-author's pull request from branch that replaces from
// with to in the contract on main.
func (j *journey) pullRequest(branch, title, from, to string) {
	t, s := j.t, j.srv
	main := j.contract("main")
	changed := strings.Replace(main, from, to, 1)
	if changed == main {
		t.Fatalf("the contract on main has no %q to change", from)
	}
	j.head = j.signedCommit(j.dev, branch, "main", map[string]string{".nova/contract.yml": changed})
	j.pull = s.CreatePullRequest(t, org, app, branch, "main", title, j.dev)
	j.wantVerified(j.head)
}

// contract is .nova/contract.yml on ref.
func (j *journey) contract(ref string) string { return j.file(ref, ".nova/contract.yml") }

// file is the file at path on ref.
func (j *journey) file(ref, path string) string {
	t, s := j.t, j.srv
	var file struct {
		Content string `json:"content"`
	}
	s.API(t, s.AdminToken, http.MethodGet, "/repos/"+org+"/"+app+"/contents/"+path+"?ref="+ref, nil, &file)
	raw, err := base64.StdEncoding.DecodeString(file.Content)
	if err != nil {
		t.Fatalf("decoding %s on %s: %v", path, ref, err)
	}
	return string(raw)
}

// wantVerified fails the journey when Gitea does not show the commit's
// signature verified: the scaffold's provenance check would refuse it.
func (j *journey) wantVerified(sha string) {
	t, s := j.t, j.srv
	var commit apiCommit
	s.API(t, s.AdminToken, http.MethodGet, "/repos/"+org+"/"+app+"/git/commits/"+sha, nil, &commit)
	if v := commit.Commit.Verification; !v.Verified {
		t.Fatalf("Gitea does not show the pull request's signed commit as verified (%s)", v.Reason)
	}
}

// apiCommit is a commit as Gitea's API shows it: whether Gitea verified
// its signature, and why not.
type apiCommit struct {
	SHA    string `json:"sha"`
	Commit struct {
		Verification struct {
			Verified bool   `json:"verified"`
			Reason   string `json:"reason"`
		} `json:"verification"`
	} `json:"commit"`
}

// signedCommit commits files on branch (from base, or on top of branch
// when they are the same), and the removal of the paths in remove, as the
// user, signed
// with a key of theirs that Gitea knows, and pushes it: the developer
// signs their commits, as the scaffold's provenance check expects.
func (j *journey) signedCommit(u giteatest.User, branch, base string, files map[string]string, remove ...string) string {
	t := j.t
	key, err := openpgp.NewEntity(u.Name, "", u.Email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	j.srv.API(t, u.Token, http.MethodPost, "/user/gpg_keys", map[string]string{"armored_public_key": armoredKey(t, openpgp.PublicKeyType, key.Serialize)}, nil)
	auth := &githttp.BasicAuth{Username: u.Name, Password: u.Token}
	dir := t.TempDir()
	repo, err := git.PlainCloneContext(t.Context(), dir, false, &git.CloneOptions{
		URL: j.srv.URL + "/" + org + "/" + app + ".git", Auth: auth,
		ReferenceName: plumbing.NewBranchReferenceName(base), SingleBranch: true,
	})
	if err != nil {
		t.Fatalf("cloning %s/%s: %v", org, app, err)
	}
	wt, err := repo.Worktree()
	if err == nil && branch != base {
		err = wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Create: true})
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range remove {
		if _, err := wt.Remove(name); err != nil {
			t.Fatalf("removing %s: %v", name, err)
		}
	}
	sig := &object.Signature{Name: u.Name, Email: u.Email, When: time.Now()}
	hash, err := wt.Commit("Greet friends too", &git.CommitOptions{Author: sig, Committer: sig, SignKey: key})
	if err != nil {
		t.Fatal(err)
	}
	spec := config.RefSpec("refs/heads/" + branch + ":refs/heads/" + branch)
	if err := repo.PushContext(t.Context(), &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: auth}); err != nil {
		t.Fatalf("pushing %s: %v", branch, err)
	}
	return hash.String()
}

// armoredKey is an OpenPGP key in ASCII armor.
func armoredKey(t *testing.T, kind string, serialize func(io.Writer) error) string {
	t.Helper()
	var out bytes.Buffer
	w, err := armor.Encode(&out, kind, nil)
	if err == nil {
		err = serialize(w)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func (j *journey) comment(as giteatest.User, body string) { j.commentOn(j.pull, as, body) }

// commentOn posts who's comment on issue (or pull request) number n.
func (j *journey) commentOn(n int, as giteatest.User, body string) {
	j.srv.API(j.t, as.Token, http.MethodPost, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", org, app, n), map[string]string{"body": body}, nil)
}

// step does what a person does, waits for the workflow run of event that
// Gitea starts for it to finish (with every other run), and records it.
// review submits who's approving review of the pull request's head. A
// review names no plan, so Nova counts it only when Gitea stamped it (to
// the second) in a second after the one its plan was recorded in; a
// person never reviews that fast, a test does. It first waits until
// Gitea's own clock, as its responses' Date says, has left the second in
// which the last run finished.
func (j *journey) review(who giteatest.User, body string) {
	t := j.t
	t.Helper()
	for {
		resp, err := http.Get(j.srv.URL + "/api/v1/version")
		if err != nil {
			t.Fatalf("asking Gitea the time: %v", err)
		}
		resp.Body.Close()
		now, err := http.ParseTime(resp.Header.Get("Date"))
		if err != nil {
			t.Fatalf("Gitea's Date header %q: %v", resp.Header.Get("Date"), err)
		}
		if now.After(j.lastDone) {
			break
		}
	}
	j.srv.API(t, who.Token, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/reviews", org, app, j.pull),
		map[string]string{"event": "APPROVED", "body": body}, nil)
}

func (j *journey) step(what, event string, do func()) job {
	j.t.Helper()
	return j.stepEnding(what, event, "success", do)
}

// stepEnding is step for a run Gitea should show as status: a refusal
// fails its job.
func (j *journey) stepEnding(what, event, status string, do func()) job {
	t := j.t
	t.Helper()
	before := j.events()
	do()
	var got actrunner.Task
	tasks := j.runner.Await(t, org, app, "finished "+event+" run after "+what, func(tasks []actrunner.Task) bool {
		got = actrunner.Task{}
		for _, task := range tasks {
			if task.ID > j.seen && task.Event == event && task.Status != "skipped" && got.ID == 0 {
				got = task
			}
		}
		return got.ID != 0 && actrunner.AllDone(tasks)
	})
	j.lastDone = time.Now()
	// Only the person's event starts a run: nova's own comments must not.
	// A run whose job's if is false does nothing: the comment workflows
	// (nova-app.yml, nova-app-breakglass.yml) both hear every comment,
	// and each runs for its own kind, on a pull request or an issue.
	var started []string
	for _, task := range tasks {
		if task.ID > j.seen && task.Status != "skipped" {
			started = append(started, task.String())
		}
	}
	if len(started) != 1 {
		t.Errorf("%s started %d runs, want 1:\n  %s", what, len(started), strings.Join(started, "\n  "))
	}
	for _, task := range tasks {
		j.seen = max(j.seen, task.ID)
	}
	rec := job{what: what, task: got, events: j.events() - before, exits: exits(j.runner.Log(t, org, app, got))}
	j.jobs = append(j.jobs, rec)
	t.Logf("%s: %s; nova exits %q; %d evidence events", what, got, rec.exits, rec.events)
	if got.Status != status {
		t.Errorf("%s: Gitea shows the run %s, want %s", what, got.Status, status)
	}
	return rec
}

var exitLine = regexp.MustCompile(`(?m)^nova (dev|qa|prod|dr): exit (\d+)$`)

// exits are the workflow's "nova <env>: exit <code>" lines, as env:code.
func exits(log string) string {
	var out []string
	for _, m := range exitLine.FindAllStringSubmatch(log, -1) {
		out = append(out, m[1]+":"+m[2])
	}
	return strings.Join(out, " ")
}

// statuses are the state of nova's newest commit status per environment
// on the head, as Gitea's combined status shows them.
func (j *journey) statuses() map[string]string {
	var combined struct {
		Statuses []struct {
			Context     string `json:"context"`
			Status      string `json:"status"`
			Description string `json:"description"`
		} `json:"statuses"`
	}
	j.srv.API(j.t, j.srv.AdminToken, http.MethodGet, "/repos/"+org+"/"+app+"/commits/"+j.head+"/status?limit=50", nil, &combined)
	out := map[string]string{}
	for _, s := range combined.Statuses {
		if !strings.HasPrefix(s.Context, "nova/") {
			continue
		}
		for _, e := range environments {
			if strings.HasSuffix(s.Context, "/"+e) {
				out[e] = s.Status
			}
		}
	}
	return out
}

func (j *journey) wantStatuses(when string, want map[string]string) {
	j.t.Helper()
	if diff := cmp.Diff(want, j.statuses()); diff != "" {
		j.t.Errorf("nova's commit statuses on the head %s (-want +got):\n%s", when, diff)
	}
}

// comments are the pull request's comments, oldest first.
func (j *journey) comments() []comment {
	var list []comment
	j.srv.API(j.t, j.srv.AdminToken, http.MethodGet, fmt.Sprintf("/repos/%s/%s/issues/%d/comments", org, app, j.pull), nil, &list)
	return list
}

type comment struct {
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

// byPerson reports whether a comment is one of the people's rather than
// nova's (which posts as whatever its token is).
func (j *journey) byPerson(c comment) bool {
	return slices.Contains([]string{j.ops.Name, j.dev.Name, j.qa.Name, j.sre.Name, j.sre2.Name}, c.User.Login)
}

// novaComment is nova's newest comment about env.
func (j *journey) novaComment(env string) string {
	list := j.comments()
	for i := len(list) - 1; i >= 0; i-- {
		if c := list[i]; !j.byPerson(c) && strings.Contains(c.Body, "· "+env) {
			return c.Body
		}
	}
	return ""
}

// approveCommand is the digest nova's comments ask env's approvers to
// approve; the journey cannot go on without it.
func (j *journey) approveCommand(env string) string {
	t := j.t
	t.Helper()
	re := regexp.MustCompile(`/nova approve ` + env + ` ([0-9a-f]{12,64})`)
	list := j.comments()
	for i := len(list) - 1; i >= 0; i-- {
		if c := list[i]; !j.byPerson(c) {
			if m := re.FindStringSubmatch(c.Body); m != nil {
				return m[1]
			}
		}
	}
	t.Fatalf("no comment of nova's asks for `/nova approve %s <digest>`; the journey cannot go on", env)
	return ""
}

// events counts the events in acme/evidence's main.
func (j *journey) events() int {
	cmd := exec.CommandContext(j.t.Context(), "git", "-C", j.evidence, "fetch", "-q", j.srv.URL+"/"+org+"/evidence.git", "+refs/heads/main:refs/heads/main")
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "couldn't find remote ref") {
			return 0 // nothing recorded yet
		}
		j.t.Fatalf("fetching the evidence repo: %v\n%s", err, out)
	}
	list := j.git(j.evidence, "ls-tree", "-r", "--name-only", "main", "--", "contracts")
	n := 0
	for _, p := range strings.Split(list, "\n") {
		if eventFile.MatchString(p) {
			n++
		}
	}
	return n
}

var eventFile = regexp.MustCompile(`/[0-9]+-nova\.[^/]+\.json$`)

// verifyEvidence runs `nova evidence verify` over the Gitea URL with the
// public keys, and checks that Gitea shows every evidence commit verified.
func (j *journey) verifyEvidence() {
	t := j.t
	dir := t.TempDir()
	env := map[string]string{
		"NOVA_EVIDENCE_TOKEN": j.bot.Token, "NOVA_EVIDENCE_PUBLIC_KEY": j.eventPub, "NOVA_COMMIT_PUBLIC_KEY": j.commitPub,
	}
	if out, err := j.novaCmd(dir, env, "evidence", "verify", j.srv.URL+"/"+org+"/evidence.git"); err != nil {
		t.Errorf("nova evidence verify over the Gitea URL: %v\n%s", err, out)
	}
	total, unverified := 0, map[string]int{}
	for page := 1; ; page++ {
		var commits []apiCommit
		j.srv.API(t, j.srv.AdminToken, http.MethodGet, fmt.Sprintf("/repos/%s/evidence/commits?sha=main&stat=false&files=false&limit=50&page=%d", org, page), nil, &commits)
		for _, c := range commits {
			total++
			if !c.Commit.Verification.Verified {
				unverified[c.Commit.Verification.Reason]++
			}
		}
		if len(commits) < 50 {
			break
		}
	}
	t.Logf("the evidence repo has %d commits", total)
	if total == 0 || len(unverified) > 0 {
		t.Errorf("Gitea shows %d evidence commits, of which not verified (by reason): %v", total, unverified)
	}
}

// keyLine is a line of a run's log that says what nova decided: the
// exit per environment, each run's verdict and gate, reason codes.
var keyLine = regexp.MustCompile("^(nova (dev|qa|prod|dr): exit|### nova run|Contract `|\\| (plan|approvals|gate|apply) \\||- `[A-Z_]+`|actrunner: )")

// dump shows what a failure needs to be diagnosed: what nova decided in
// every run (and the end of a run that failed), the head of every
// comment, and the head's statuses.
func (j *journey) dump() {
	t := j.t
	var b strings.Builder
	tasks, err := j.runner.Tasks(t.Context(), org, app)
	if err != nil {
		fmt.Fprintf(&b, "listing tasks: %v\n", err)
	}
	for _, task := range tasks {
		fmt.Fprintf(&b, "\n===== %s\n", task)
		log := j.runner.TaskLog(task.ID)
		for _, line := range strings.Split(log, "\n") {
			if keyLine.MatchString(line) {
				b.WriteString("  " + line + "\n")
			}
		}
		if task.Status != "success" {
			b.WriteString("  --- its last lines:\n" + tail(log, 25) + "\n")
		}
	}
	if j.pull != 0 {
		for _, c := range j.comments() {
			body := c.Body
			if !j.byPerson(c) {
				body = head(body, 8)
			}
			fmt.Fprintf(&b, "\n===== comment by %s:\n%s\n", c.User.Login, body)
		}
		var combined struct {
			State    string `json:"state"`
			Statuses []struct {
				Context     string `json:"context"`
				Status      string `json:"status"`
				Description string `json:"description"`
			} `json:"statuses"`
		}
		j.srv.API(t, j.srv.AdminToken, http.MethodGet, "/repos/"+org+"/"+app+"/commits/"+j.head+"/status?limit=50", nil, &combined)
		fmt.Fprintf(&b, "\n===== combined status of the head: %s\n", combined.State)
		for _, s := range combined.Statuses {
			fmt.Fprintf(&b, "  %s: %s (%s)\n", s.Context, s.Status, s.Description)
		}
	}
	t.Logf("what Gitea shows:\n%s", b.String())
}

// note logs the closing note's figures: events per job, jobs per journey.
func (j *journey) note() {
	var b strings.Builder
	total := 0
	for _, r := range j.jobs {
		fmt.Fprintf(&b, "  %-55s %-10s %-28q %4d events\n", r.what, r.task.Status, r.exits, r.events)
		total += r.events
	}
	j.t.Logf("journey: %d jobs, %d evidence events\n%s", len(j.jobs), total, b.String())
}

// novaCmd runs the nova under test in dir with a clean environment.
func (j *journey) novaCmd(dir string, extra map[string]string, args ...string) (string, error) {
	home := j.t.TempDir()
	cmd := exec.CommandContext(j.t.Context(), j.nova, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"), "XDG_DATA_HOME=" + filepath.Join(home, ".data"), "GIT_CONFIG_NOSYSTEM=1"}
	for k, v := range extra {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (j *journey) git(dir string, args ...string) string {
	j.t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.CommandContext(j.t.Context(), "git", args...)
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		j.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func gitEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_TERMINAL_PROMPT=0"}
}

// buildNova builds the nova binary under test from this repository.
func buildNova(t *testing.T, root string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "nova")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", out, "./action")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func head(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = append(parts[:lines], fmt.Sprintf("… (%d lines more)", len(parts)-lines))
	}
	return strings.Join(parts, "\n")
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = append([]string{fmt.Sprintf("… (%d lines before)", len(parts)-lines)}, parts[len(parts)-lines:]...)
	}
	return strings.Join(parts, "\n")
}
