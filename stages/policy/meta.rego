# The meta-policy: one rule over the merged records of an evaluation. It is
# evaluated as policy, like every other rule, so that the decision to block
# is itself a recorded, reproducible rule result.
package nova.meta

# input.pcrs: every record the engines returned in this evaluation.
#
# A critical rule that could not be evaluated (result "error") blocks as its
# failure would: otherwise a plan crafted to break a rule's evaluation would
# get past it. An engine that crashed as a whole reports a high error and
# does not block, so that a flaky tool cannot stop every run.
critical_failures contains {"ruleId": p.ruleId, "resourceRef": object.get(p, "resourceRef", ""), "engine": p.engine, "result": p.result} if {
	some p in input.pcrs
	p.severity == "critical"
	p.result in {"fail", "error"}
}

blocks if count(critical_failures) > 0
