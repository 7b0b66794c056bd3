package templates

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/template"
)

// The engine must render what text/template renders, byte for byte; these
// tests render with both.

// stdWorkflows is the workflow set as text/template parses it.
func stdWorkflows(t *testing.T) *template.Template {
	t.Helper()
	return template.Must(template.New("workflows").Delims("[[", "]]").Funcs(template.FuncMap{
		"q":       quote,
		"guarded": Guarded,
		"uses":    func(w *Workflow, env string) string { return w.Action.Uses(env) },
		"job":     newJob,
	}).ParseFS(files, "workflows/*.tmpl"))
}

// same fails t unless both engines render name with data alike.
func same(t *testing.T, std *template.Template, ours *Template, name string, data any) {
	t.Helper()
	var want, got bytes.Buffer
	if err := std.ExecuteTemplate(&want, name, data); err != nil {
		t.Fatalf("%s: text/template: %v", name, err)
	}
	if err := ours.ExecuteTemplate(&got, name, data); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%s renders differently from text/template:\n%s", name, firstDiff(got.String(), want.String()))
	}
}

// firstDiff shows where got and want part.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-120)
	return fmt.Sprintf("at byte %d\n--- got:\n%s\n--- want:\n%s", i, got[from:min(len(got), i+120)], want[from:min(len(want), i+120)])
}

func TestWorkflowsRenderAsTextTemplate(t *testing.T) {
	std := stdWorkflows(t)
	envLists := [][]string{
		{"dev"}, {"qa"}, {"prod"}, {"dev", "qa"}, {"dev", "prod"}, {"qa", "prod", "dr"},
		{"dev", "qa", "prod", "dr"}, {"dr", "prod", "qa", "dev"},
	}
	built := Binary{Version: "v1.4.0", Source: "https://example.com/nova.git", Commit: strings.Repeat("c", 40)}
	variants := map[string]func(*Workflow){
		"sample":    func(*Workflow) {},
		"oidc":      func(w *Workflow) { w.OIDC = true },
		"promote":   func(w *Workflow) { w.PromoteTo = "inputs.promote-to" },
		"both":      func(w *Workflow) { w.OIDC, w.PromoteTo = true, "inputs.promote-to" },
		"built":     func(w *Workflow) { w.Nova = built },
		"dot dir":   func(w *Workflow) { w.Dir = "." },
		"no commit": func(w *Workflow) { w.Action.Commit = "" },
		"hostile": func(w *Workflow) {
			w.Name, w.Dir, w.Contract = `a "b" 'c' <d> & e: {f}`, "dir with \"quotes\"\n", `c\ntract.yml`
			w.Nova.ReleaseURL = "https://example.com/n?a=1&b=\"2\""
		},
		"empty": func(w *Workflow) { *w = Workflow{Environments: w.Environments} },
	}
	for _, kind := range []string{GitHubWorkflow, GiteaWorkflow, DeployWorkflow} {
		for vname, vary := range variants {
			for _, envs := range envLists {
				w := sample()
				if kind == DeployWorkflow {
					w = Deploy
				}
				w.Environments = envs
				vary(&w)
				t.Run(fmt.Sprintf("%s/%s/%s", kind, vname, strings.Join(envs, "-")), func(t *testing.T) {
					same(t, std, workflows(), kind+".yml.tmpl", &w)
					// RenderWorkflow is what callers use; it must agree too.
					got, err := RenderWorkflow(kind, w)
					var want bytes.Buffer
					if err == nil {
						err = std.ExecuteTemplate(&want, kind+".yml.tmpl", &w)
					}
					if err != nil || !bytes.Equal(got, want.Bytes()) {
						t.Errorf("RenderWorkflow differs (err %v)", err)
					}
				})
			}
		}
	}
}

func TestScaffoldRendersAsTextTemplate(t *testing.T) {
	std := template.Must(template.New("init").Delims("[[", "]]").ParseFS(files, "init/*.tmpl"))
	same(t, std, Scaffold(), "approvers.yml.tmpl", map[string]string{"QA": "[]", "SRE": "[]"})
	same(t, std, Scaffold(), "approvers.yml.tmpl", map[string]string{"QA": `["a", "org/team"]`, "SRE": `["<b>"]`})
	type input struct {
		Name, Description, Value string
		Required                 bool
	}
	type contract struct {
		ID, Stack, StackDescription string
		Inputs                      []input
	}
	for _, d := range []contract{
		{ID: "0c5f", Stack: "web", StackDescription: "A web app."},
		{ID: `"x"`, Stack: "db", StackDescription: "", Inputs: []input{
			{Name: "size", Description: "How big.", Value: `"small"`},
			{Name: "count", Description: "", Value: "0", Required: true},
			{Name: "tags", Description: "Tags & <labels>.", Value: `{"a":"b"}`, Required: true},
		}},
	} {
		same(t, std, Scaffold(), "contract.yml.tmpl", d)
	}
}

// TestEngineMatchesTextTemplate holds each construct the engine accepts to
// text/template's behaviour, beyond what Nova's templates happen to
// exercise today.
func TestEngineMatchesTextTemplate(t *testing.T) {
	type inner struct {
		S string
		N int
	}
	type data struct {
		S      string
		N      int
		U      uint8
		F      float64
		B      bool
		P      *inner
		Nil    *inner
		L      []string
		E      []int
		M      map[string]string
		I      any
		Struct inner
	}
	d := &data{S: "s", N: 3, U: 3, F: 1.5, B: true, P: &inner{"x", 0}, L: []string{"a", "", "c"},
		M: map[string]string{"K": "v"}, I: 7, Struct: inner{"y", 2}}
	cases := []string{
		"{{.}}", "{{.S}}|{{.N}}|{{.U}}|{{.F}}|{{.B}}|{{.I}}", "{{.P}}", "{{.Nil}}", "{{.Struct}}", "{{.L}}|{{.E}}|{{.M}}",
		"{{.P.S}}{{.P.N}}{{.M.K}}", "{{$}}{{$.S}}",
		"a  \n {{- .S -}} \n\t b", "a {{- .S}} b", "a {{.S -}} b", "a{{-  .S  -}}b", "x {{- /* c */ -}} y", "x {{/* c */}} y",
		"{{if .B}}t{{end}}", "{{if .E}}t{{else}}f{{end}}", "{{if .Nil}}t{{else if .N}}n{{else}}f{{end}}",
		"{{if .Nil}}t{{else if .E}}n{{else}}f{{end}}", "{{if .S}}{{if .F}}a{{end}}{{end}}", "{{if .I}}i{{end}}{{if .M}}m{{end}}{{if .Struct}}s{{end}}",
		"{{with .P}}{{.S}}{{end}}", "{{with .Nil}}{{.S}}{{else}}none{{end}}", "{{with .S}}{{.}}{{end}}",
		"{{range .L}}[{{.}}]{{end}}", "{{range $e := .L}}[{{$e}}{{.}}]{{end}}", "{{range $i, $e := .L}}{{$i}}={{$e}},{{end}}",
		"{{range $i, $e := .L}}{{range $.L}}{{$i}}{{.}}{{end}}{{end}}", "{{range .E}}x{{end}}",
		`{{eq .S "s"}}{{eq .N 3}}{{eq .U 3}}{{eq .N .U}}{{ne .S "t"}}{{eq .S "a" "b" "s"}}{{eq .B .B}}`,
		`{{len .L}}{{len .S}}{{len .M}}`, `{{print .S "x"}}{{print 1 2}}{{print .S .N}}{{print}}`,
		`{{print (print .S "/**") (len .L)}}`, "{{`raw`}}{{\"q\\\"\\n\"}}{{-1}}{{0x10}}",
		"{{if eq .S \"s\"}}yes{{end}}{{if ne (len .L) 3}}no{{end}}",
		"{{define \"x\"}}<{{.}}>{{end}}{{template \"x\" .S}}{{template \"x\"}}{{template \"x\" (print .N)}}",
		"{{.P.S}}\n{{- range .L}}\n  {{.}}\n{{- end}}\n",
	}
	for _, src := range cases {
		std, err := template.New("t").Parse(src)
		if err != nil {
			t.Fatalf("%q: text/template: %v", src, err)
		}
		ours, err := parse("t", "{{", "}}", nil, false, source{"t", src})
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		var want, got bytes.Buffer
		if err := std.Execute(&want, d); err != nil {
			t.Fatalf("%q: text/template: %v", src, err)
		}
		if err := ours.Execute(&got, d); err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got.String() != want.String() {
			t.Errorf("%q: got %q, want %q", src, got.String(), want.String())
		}
	}
}

func TestEngineRefusesWhatItDoesNotSupport(t *testing.T) {
	for _, src := range []string{
		"{{.S | print}}", "{{$x := .S}}", "{{$x = .S}}", "{{range .L}}{{else}}{{end}}", "{{block \"b\" .}}{{end}}",
		"{{range .L}}{{break}}{{end}}", "{{true}}", "{{nil}}", "{{1.5}}", "{{.S.Len 3}}", "{{printf \"%d\" 1}}",
		"{{and .A .B}}", "{{(.P).S}}", "{{$undefined}}", "{{if .S}}", "{{end}}", "{{with .S}}{{else with .T}}{{end}}",
		"{{.S", "{{/* open", "{{\"unterminated}}", "{{range $a, $b, $c := .L}}{{end}}", "{{if}}{{end}}",
		"{{if .S}}{{define \"x\"}}{{end}}{{end}}", "{{print print}}", "{{.S .T}}",
	} {
		if _, err := parse("t", "{{", "}}", nil, false, source{"t", src}); err == nil {
			t.Errorf("%q parsed", src)
		}
	}
}

func TestEngineExecutionErrors(t *testing.T) {
	type data struct {
		S     string
		Nil   *struct{ S string }
		M     map[string]string
		small int
	}
	for _, src := range []string{
		"{{.Missing}}", "{{.S.Deeper}}", "{{.Nil.S}}", "{{.M.Absent}}", "{{.small}}", "{{template \"nope\"}}",
		"{{eq .S 1}}", "{{len .Nil}}", "{{range .S}}{{end}}", "{{range .Nil}}x{{end}}", "{{if .M.Absent}}{{end}}",
	} {
		tmpl, err := parse("t", "{{", "}}", nil, false, source{"t", src})
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if err := tmpl.Execute(&bytes.Buffer{}, data{M: map[string]string{}}); err == nil {
			t.Errorf("%q executed without error", src)
		}
	}
}

func TestWorkflowFuncsCheckTheirArguments(t *testing.T) {
	for _, src := range []string{`[[q 1]]`, `[[guarded]]`, `[[uses . "dev"]]`, `[[job $ "0"]]`, `[[job $ 9]]`} {
		tmpl, err := parse("t", "[[", "]]", workflowFuncs(), false, source{"t", src})
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		w := sample()
		if err := tmpl.Execute(&bytes.Buffer{}, "not a workflow"); err == nil && !strings.Contains(src, "$") {
			t.Errorf("%q executed without error", src)
		}
		if strings.Contains(src, "$") {
			if err := tmpl.Execute(&bytes.Buffer{}, &w); err == nil {
				t.Errorf("%q executed without error", src)
			}
		}
	}
}
