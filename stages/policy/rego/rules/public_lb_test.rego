package nova.platform.public_lb_test

import data.nova.platform.public_lb as rule

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

lb(addr, internal) := {"address": addr, "mode": "managed", "type": "aws_lb", "change": {"actions": ["create"], "after": {"internal": internal}, "after_unknown": {}}}

test_internet_facing_lb_fails if {
	f := rule.findings with input as post([lb("aws_lb.public", false), lb("aws_lb.private", true)])
	{x.resourceRef | some x in f} == {"aws_lb.public"}
}

test_scheme_input_fails if {
	f := rule.findings with input as {"phase": "pre-plan", "target": {"instances": [{"name": "edge", "inputs": {"scheme": {"type": "string", "value": "internet-facing"}}}]}}
	{x.resourceRef | some x in f} == {"module.edge"}
}

test_internal_lb_passes if {
	count(rule.findings) == 0 with input as post([lb("aws_lb.private", true)])
	rule.checked == 1 with input as post([lb("aws_lb.private", true)])
}
