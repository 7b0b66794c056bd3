package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// ApproversFile is where a consumer repository declares who may approve.
// It is always read from the trusted base (the default branch, or the pull
// request's base commit), never from the change under review: a pull
// request that adds its author to sre must not let that author approve it.
const ApproversFile = ".nova/approvers.yml"

// Default approver groups per environment; dev needs none.
var defaultApproverGroups = map[Environment]string{QA: "qa", Prod: "sre", DR: "sre"}

// ApproversReader reads the approver config from the trusted base. It is
// asked only when a guarded environment needs it, so dev runs need no
// approver config at all.
type ApproversReader interface {
	Approvers(ctx context.Context) (*ApproverConfig, error)
}

// StaticApprovers is an approver config already read.
type StaticApprovers struct{ Config *ApproverConfig }

// Approvers implements ApproversReader.
func (s StaticApprovers) Approvers(context.Context) (*ApproverConfig, error) {
	if s.Config == nil {
		return nil, Errorf(ApproversInvalid, "no approver config")
	}
	return s.Config, nil
}

// ApproverConfig is .nova/approvers.yml: the approver groups and which
// environment each approves.
type ApproverConfig struct {
	Groups map[string]ApproverGroup `yaml:"groups"`
	// Environments overrides the default group of an environment.
	Environments map[Environment]string `yaml:"environments"`
	// Keys are local approvers' public keys (PEM, cosign.pub format) by
	// name, which verify their signed claims.
	Keys map[Login]string `yaml:"keys"`
	// BreakGlass bounds the grants the breakglass group makes.
	BreakGlass BreakGlassConfig `yaml:"breakglass"`
	// DestroyApprovals overrides how many distinct approvers a destroy
	// in an environment needs (DestroyApprovalsFor).
	DestroyApprovals map[Environment]int `yaml:"destroyApprovals"`
}

// ApproverGroup lists who is in a group: forge logins, and forge teams
// ("org/team") whose members are in it too.
type ApproverGroup struct {
	Members []Login  `yaml:"members"`
	Teams   []string `yaml:"teams"`
}

var (
	groupName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`) })
	teamName  = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	})
)

// ParseApprovers reads an approver config strictly: unknown fields, an
// environment mapped to a group that does not exist and malformed names
// are errors (APPROVERS_INVALID), never silently ignored, since an ignored
// line would change who may approve production.
func ParseApprovers(data []byte) (*ApproverConfig, error) {
	var c ApproverConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		// yaml lists each unknown field on a line of its own; one line
		// shows them all wherever errors are shown one line each.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, Errorf(ApproversInvalid, "%s: %s", ApproversFile, strings.Join(te.Errors, "; "))
		}
		return nil, Errorf(ApproversInvalid, "%s: %w", ApproversFile, err)
	}
	for name, g := range c.Groups {
		if !groupName().MatchString(name) {
			return nil, Errorf(ApproversInvalid, "%s: group name %q is not lower-case letters, digits, - and _", ApproversFile, name)
		}
		// Members are kept canonical, so every later comparison is exact.
		members := make([]Login, 0, len(g.Members))
		for _, m := range g.Members {
			l, err := ParseLogin(string(m))
			if err != nil {
				return nil, Errorf(ApproversInvalid, "%s: group %s: member %q is not a login", ApproversFile, name, m)
			}
			if !slices.Contains(members, l) {
				members = append(members, l)
			}
		}
		g.Members = members
		c.Groups[name] = g
		for _, t := range g.Teams {
			if !teamName().MatchString(t) {
				return nil, Errorf(ApproversInvalid, "%s: group %s: team %q is not org/team", ApproversFile, name, t)
			}
		}
	}
	for env, group := range c.Environments {
		if !env.Valid() || env.Autonomous() {
			return nil, Errorf(ApproversInvalid, "%s: environments: %q is not qa, prod or dr", ApproversFile, env)
		}
		if _, ok := c.Groups[group]; !ok {
			return nil, Errorf(ApproversInvalid, "%s: environments: %s is approved by group %q, which is not defined", ApproversFile, env, group)
		}
	}
	for _, env := range []Environment{QA, Prod, DR} {
		if _, ok := c.Groups[c.GroupFor(env)]; !ok {
			return nil, Errorf(ApproversInvalid, "%s: no group %q approves %s; define it under groups or map %s to another group under environments", ApproversFile, c.GroupFor(env), env, env)
		}
	}
	if err := c.BreakGlass.check(); err != nil {
		return nil, err
	}
	if err := c.checkDestroyApprovals(); err != nil {
		return nil, err
	}
	keys := make(map[Login]string, len(c.Keys))
	for name, pem := range c.Keys {
		l, err := ParseLogin(string(name))
		if err != nil {
			return nil, Errorf(ApproversInvalid, "%s: keys: %q is not a name", ApproversFile, name)
		}
		// Two keys for one person, differing only in case, would leave
		// which one verifies to map order.
		if _, dup := keys[l]; dup {
			return nil, Errorf(ApproversInvalid, "%s: keys: %s is listed twice (names are compared without case)", ApproversFile, l)
		}
		keys[l] = pem
	}
	c.Keys = keys
	return &c, nil
}

// GroupFor is the group that approves env ("" for dev).
func (c *ApproverConfig) GroupFor(env Environment) string {
	if g, ok := c.Environments[env]; ok {
		return g
	}
	return defaultApproverGroups[env]
}

// Members lists a group's logins, sorted; its teams' members are not
// listed (they are asked of the forge one login at a time).
func (c *ApproverConfig) Members(group string) []Login {
	return slices.Sorted(slices.Values(c.Groups[group].Members))
}

// String names the config's groups for messages.
func (g ApproverGroup) String() string {
	return fmt.Sprintf("members %v, teams %v", g.Members, g.Teams)
}
