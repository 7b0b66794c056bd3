package main

import (
	"strings"

	"github.com/sethvargo/go-githubactions"
)

// actionArgs turns the container action's inputs into nova's command line,
// so action mode and CLI mode share one parser and one set of defaults. The
// runner passes each input as INPUT_<NAME>.
func actionArgs(getenv func(string) string) []string {
	gha := githubactions.New(githubactions.WithGetenv(getenv))
	cmd := gha.GetInput("command")
	if cmd == "" {
		cmd = "run"
	}
	args := []string{cmd}
	for _, in := range []struct{ input, flag string }{
		{"dir", "--dir"},
		{"contract", "--contract"},
		{"environment", "--env"},
		{"output", "--output"},
		{"backend", "--backend"},
		{"bundle", "--bundle"},
		{"parallel", "--parallel"},
		{"head", "--head"},
	} {
		if v := gha.GetInput(in.input); v != "" {
			args = append(args, in.flag, v)
		}
	}
	// select runs many contracts: "all", or those the change "changed";
	// any other word becomes a flag nova does not know, and is refused.
	if sel := gha.GetInput("select"); sel != "" {
		args = append(args, "--"+sel)
	}
	// backend-config takes one key=value per line, as multi-line inputs do.
	for _, line := range strings.Split(gha.GetInput("backend-config"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			args = append(args, "--backend-config", line)
		}
	}
	return args
}
