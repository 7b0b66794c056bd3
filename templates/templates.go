// Package templates embeds the text templates Nova renders: the Terraform
// root module now, PR comments, job summaries and consumer workflows later.
// Templates only lay out structure; every value placed into them is escaped
// by the adapter that renders it.
package templates

import (
	"embed"
	"text/template"
)

//go:embed terraform/*.tmpl
var files embed.FS

// TerraformRoot is the template of the root module the Terraform adapter
// renders for a target stack.
var TerraformRoot = template.Must(template.New("root.tf.tmpl").ParseFS(files, "terraform/root.tf.tmpl"))
