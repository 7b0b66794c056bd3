package nfr

import (
	"fmt"
	"strings"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
)

// Statuses of a declared NFR, recorded in evidence.status.
const (
	Satisfied      = "satisfied"
	NotSatisfied   = "not-satisfied"
	NotSatisfiable = "not-satisfiable"
)

// assessment is the outcome for one declared NFR.
type assessment struct {
	status   string
	reason   runner.Reason
	message  string
	provided any
	matches  []instanceMatch
	// evidence adds to the record's evidence.
	evidence map[string]any
}

// assess matches a declared NFR against the capabilities of the stack's
// modules and the values the stack gives their inputs.
func assess(reg *registry.Registry, target *runner.TargetStack, k kind, required any) assessment {
	if trivial(k, required) {
		return assessment{status: Satisfied, message: fmt.Sprintf("%s %s asks for nothing a stack must provide", k.name, show(required))}
	}
	var concerned, silent []instanceMatch
	for _, inst := range target.Instances {
		m := match(reg, inst, k.name, k.measure)
		if m.Declares {
			concerned = append(concerned, m)
		} else {
			silent = append(silent, m)
		}
	}
	all := append(append([]instanceMatch{}, concerned...), silent...)
	if len(concerned) == 0 || (k.scope == every && len(silent) > 0) {
		return assessment{
			status: NotSatisfiable, reason: runner.NFRNotSatisfiable, matches: all,
			message: fmt.Sprintf("%s cannot be met by stack %s: %s", k.name, target.Stack, describeSilent(silent, k.name)),
		}
	}
	var unmet []string
	for _, m := range concerned {
		if !m.Holds {
			unmet = append(unmet, fmt.Sprintf("%s (%s): %s", m.Instance, m.Module, m.Because))
		}
	}
	if len(unmet) > 0 {
		return assessment{
			status: NotSatisfied, reason: runner.NFRNotSatisfied, matches: all,
			message: fmt.Sprintf("%s %s is not met: %s", k.name, show(required), strings.Join(unmet, "; ")),
		}
	}
	provided, ok := aggregate(k, concerned)
	if !ok {
		return assessment{
			status: NotSatisfiable, reason: runner.NFRNotSatisfiable, matches: all,
			message: fmt.Sprintf("%s cannot be met by stack %s: a module's capability gives no %s level", k.name, target.Stack, k.name),
		}
	}
	if !meets(k, provided, required) {
		return assessment{
			status: NotSatisfied, reason: runner.NFRNotSatisfied, matches: all, provided: provided,
			message: fmt.Sprintf("%s: stack %s provides %s, the contract requires %s", k.name, target.Stack, show(provided), show(required)),
		}
	}
	return assessment{
		status: Satisfied, matches: all, provided: provided,
		message: fmt.Sprintf("%s %s is met by stack %s (%s)", k.name, show(required), target.Stack, show(provided)),
	}
}

// aggregate combines the levels of the concerned instances into the
// stack's: availability multiplies (parts in series fail independently),
// times and latencies take the worst, classifications the least sensitive.
func aggregate(k kind, ms []instanceMatch) (any, bool) {
	switch k.measure {
	case flag:
		return true, true
	case atLeast:
		product := 1.0
		for _, m := range ms {
			v, ok := number(m.Level)
			if !ok {
				return nil, false
			}
			product *= v / 100
		}
		return round(product * 100), true
	case atMost:
		worst := 0.0
		for _, m := range ms {
			v, ok := number(m.Level)
			if !ok {
				return nil, false
			}
			worst = max(worst, v)
		}
		return worst, true
	case class:
		least := ""
		for _, m := range ms {
			c, ok := m.Level.(string)
			if _, known := classRank[c]; !ok || !known {
				return nil, false
			}
			if least == "" || classRank[c] < classRank[least] {
				least = c
			}
		}
		return least, true
	}
	return nil, false
}

func meets(k kind, provided, required any) bool {
	switch k.measure {
	case atLeast:
		p, _ := number(provided)
		r, _ := number(required)
		return p >= r
	case atMost:
		p, _ := number(provided)
		r, _ := number(required)
		return p <= r
	case class:
		return classRank[provided.(string)] >= classRank[required.(string)]
	}
	return true
}

// round keeps an availability readable (99.89001 → 99.89) without rounding
// a real shortfall away.
func round(v float64) float64 {
	return float64(int64(v*10000)) / 10000
}

func describeSilent(silent []instanceMatch, nfr string) string {
	if len(silent) == 0 {
		return fmt.Sprintf("no module declares a %s capability", nfr)
	}
	var parts []string
	for _, m := range silent {
		parts = append(parts, fmt.Sprintf("%s (%s)", m.Instance, m.Module))
	}
	return fmt.Sprintf("no %s capability is declared by %s", nfr, strings.Join(parts, ", "))
}
