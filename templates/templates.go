// Package templates embeds the templates Nova renders: the Terraform root
// module, the pull request comment, the audit report, and (later)
// consumer workflows.
// Templates only lay out structure; every value placed into them is escaped
// by the adapter that renders it.
package templates

import (
	"embed"
	"text/template"
)

//go:embed terraform/*.tmpl comment/*.tmpl
var files embed.FS

// TerraformRoot is the template of the root module the Terraform adapter
// renders for a target stack.
var TerraformRoot = template.Must(template.New("root.tf.tmpl").ParseFS(files, "terraform/root.tf.tmpl"))

// PRComment is the template of the comment Nova keeps on a pull request,
// one per contract and environment.
var PRComment = template.Must(template.New("pr.md.tmpl").ParseFS(files, "comment/pr.md.tmpl"))

// ReportHTML is the source of the audit report page, an html/template
// that runner/audit/report parses on first use (so commands that never
// render it do not pay for parsing it).
//
//go:embed report/report.html.tmpl
var ReportHTML string
