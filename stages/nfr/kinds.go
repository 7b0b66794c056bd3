package nfr

import (
	"fmt"

	"github.com/nova-platform/nova/runner"
)

// scope says which instances of a stack an NFR concerns.
type scope int

const (
	// every instance: the stack is only as available, as multi-AZ or as
	// quick to recover as each of its parts.
	every scope = iota
	// declaring instances: those whose module declares the capability,
	// typically the ones that hold data (encryption, backups, RPO).
	declaring
)

// measure says how levels compare with the requirement.
type measure int

const (
	flag    measure = iota // the capability holds or not
	atLeast                // a level at least the required one (availability)
	atMost                 // a level at most the required one (minutes, milliseconds)
	class                  // a data classification at least as sensitive as required
)

// kind describes one NFR of the contract's nfr block.
type kind struct {
	name     string
	severity runner.Severity
	scope    scope
	measure  measure
}

// kinds lists the NFRs matched against capabilities, in contract order.
// monthlyCostCeiling is compared with the cost estimate instead.
var kinds = []kind{
	{"availability", runner.High, every, atLeast},
	{"rpoMinutes", runner.High, declaring, atMost},
	{"rtoMinutes", runner.High, every, atMost},
	{"encryptionAtRest", runner.High, declaring, flag},
	{"backups", runner.High, declaring, flag},
	{"multiAz", runner.Medium, every, flag},
	{"latencyP99Ms", runner.Medium, every, atMost},
	{"dataClassification", runner.High, declaring, class},
}

// classRank orders data classifications by sensitivity.
var classRank = map[string]int{"public": 0, "internal": 1, "confidential": 2, "restricted": 3}

// declared returns the contract's requirement for k, and whether the
// contract declares it.
func declared(n *runner.NFR, k kind) (any, bool) {
	if n == nil {
		return nil, false
	}
	switch k.name {
	case "availability":
		return deref(n.Availability)
	case "rpoMinutes":
		return deref(n.RPOMinutes)
	case "rtoMinutes":
		return deref(n.RTOMinutes)
	case "encryptionAtRest":
		return deref(n.EncryptionAtRest)
	case "backups":
		return deref(n.Backups)
	case "multiAz":
		return deref(n.MultiAZ)
	case "latencyP99Ms":
		return deref(n.LatencyP99Ms)
	case "dataClassification":
		return n.DataClassification, n.DataClassification != ""
	}
	panic(fmt.Sprintf("nfr: unknown kind %q", k.name))
}

func deref[T any](p *T) (any, bool) {
	if p == nil {
		return nil, false
	}
	return *p, true
}

// trivial reports requirements that ask for nothing: a flag declared false,
// public data.
func trivial(k kind, required any) bool {
	switch k.measure {
	case flag:
		return required == false
	case class:
		return required == "public"
	}
	return false
}
