# The platform rules in conftest's convention, for the benchmark comparison:
# `conftest test -p rules -p testdata/bench/main.rego payload.json` evaluates
# the same Rego over the same input as BenchmarkPolicyPlan500.
package main

import data.nova.platform

deny contains msg if {
	some name
	some f in platform[name].findings
	msg := sprintf("%s %s: %s", [platform[name].rule.id, f.resourceRef, f.message])
}
