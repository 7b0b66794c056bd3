# The meta-policy: one rule over the merged records of an evaluation. It is
# evaluated as policy, like every other rule, so that the decision to block
# is itself a recorded, reproducible rule result.
package nova.meta

# input.pcrs: every record the engines returned in this evaluation.
critical_failures contains {"ruleId": p.ruleId, "resourceRef": object.get(p, "resourceRef", ""), "engine": p.engine} if {
	some p in input.pcrs
	p.severity == "critical"
	p.result == "fail"
}

blocks if count(critical_failures) > 0
