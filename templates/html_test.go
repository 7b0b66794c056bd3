package templates

import (
	"bytes"
	htmltemplate "html/template"
	"testing"
)

func TestHTMLModeMatchesHTMLTemplate(t *testing.T) {
	type data struct {
		S, Evil string
		N       int
		L       []string
	}
	d := data{S: "plain", Evil: "<a href=\"x\">'&+</a>\x00 #?é", N: -4, L: []string{"a b", "<c>"}}
	for _, src := range []string{
		`<p>{{.Evil}}</p>{{.N}}`, `<a href="#{{.Evil}}" title="{{.Evil}}">{{.S}}</a>`, `<a href="x?q={{.Evil}}">`,
		`<a href='#{{.Evil}}'>`, `<title>{{.Evil}}</title><svg><title id="{{.S}}-t">{{.Evil}}</title></svg>`,
		`<textarea>{{.Evil}}</textarea>`, `<div class="{{.S}}" data-value="{{.Evil}}" aria-label="{{.Evil}}">`,
		`<ul>{{range .L}}<li class="{{.}}">{{.}}</li>{{end}}</ul>`, `{{if .S}}<b id="{{.S}}">{{else}}<i>{{end}}x`,
		`<!DOCTYPE html><meta content="a"><p a=b c>{{.Evil}}</p>`, `<svg viewBox="0 0 {{.N}} {{.N}}" xmlns="http://www.w3.org/2000/svg"></svg>`,
		`{{with .L}}<p>{{len .}}</p>{{end}}`,
	} {
		std, err := htmltemplate.New("t").Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := parse("t", "{{", "}}", nil, true, source{"t", src})
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		var want, got bytes.Buffer
		if err := std.Execute(&want, d); err != nil {
			t.Fatalf("%q: html/template: %v", src, err)
		}
		if err := ours.Execute(&got, d); err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		if got.String() != want.String() {
			t.Errorf("%q:\ngot  %q\nwant %q", src, got.String(), want.String())
		}
	}
}

func TestHTMLModeRefusesContextsItDoesNotEscape(t *testing.T) {
	for _, src := range []string{
		`<script>{{.S}}</script>`, `<style>{{.S}}</style>`, `<p style="{{.S}}">`, `<p onclick="{{.S}}">`,
		`<p data-onx="{{.S}}">`, `<a href="{{.S}}">`, `<img src="/x/{{.S}}">`, `<p class={{.S}}>`, `<p {{.S}}>`,
		`<{{.S}}>`, `<p class="{{.S}}`, `<!-- {{.S}} -->`, `{{if .S}}<p class="{{else}}<p>{{end}}`,
		`{{range .L}}<p class="{{end}}`, `{{define "x"}}{{end}}{{template "x"}}`, `<img srcset="{{.S}}">`,
	} {
		if _, err := parse("t", "{{", "}}", nil, true, source{"t", src}); err == nil {
			t.Errorf("%q parsed in HTML mode", src)
		}
	}
}
