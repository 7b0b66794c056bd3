package registry

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nodeModule is a provider-free L1 module with an input of each kind the
// tests need. Its module.yaml and Terraform agree; cases break them apart.
var nodeModule = map[string]string{
	"modules/node/module.yaml": `name: node
version: 1.2.3
description: A test module.
inputs:
  text:
    type: string
    description: Required text.
  size:
    type: number
    default: 1
  items:
    type: list(string)
    default: []
  labels:
    type: map(string)
    default: {}
  data:
    type: any
    default: null
  secret:
    type: string
    default: ""
    sensitive: true
outputs:
  text:
    type: string
  size:
    type: number
  token:
    type: string
    sensitive: true
capabilities:
  - nfr: backups
    input: size
    equals: 2
  - nfr: availability
    provides: 99.9
`,
	"modules/node/terraform/main.tf": `variable "text" {
  type = string
}

variable "size" {
  type    = number
  default = 1
}

variable "items" {
  type    = list(string)
  default = []
}

variable "labels" {
  type    = map(string)
  default = {}
}

variable "data" {
  type    = any
  default = null
}

variable "secret" {
  type      = string
  default   = ""
  sensitive = true
}

resource "terraform_data" "this" {
  input = var.text
}

output "text" {
  value = terraform_data.this.output
}

output "size" {
  value = var.size
}

output "token" {
  value     = sha256(var.secret)
  sensitive = true
}
`,
}

// writeRegistry lays files out in a fresh directory and returns it as the
// file system Load reads.
func writeRegistry(t *testing.T, files map[string]string) fs.FS {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return os.DirFS(dir)
}

// withNode returns nodeModule plus extra files.
func withNode(extra map[string]string) map[string]string {
	files := maps.Clone(nodeModule)
	maps.Copy(files, extra)
	return files
}

// chainStack is a stack of n node instances, each the only child of the
// one before it, so the deepest instance sits at depth n.
func chainStack(n int) string {
	var b strings.Builder
	b.WriteString("name: s\nversion: 1.0.0\ninstances:\n")
	for i := range n {
		b.WriteString("  - name: n" + string(rune('a'+i)) + "\n    module: node\n    inputs: {text: x}\n")
		if i+1 < n {
			b.WriteString("    children: [n" + string(rune('a'+i+1)) + "]\n")
		}
	}
	return b.String()
}

// nested wraps leaf in depth single-element lists.
func nested(depth int, leaf any) any {
	v := leaf
	for range depth {
		v = []any{v}
	}
	return v
}
