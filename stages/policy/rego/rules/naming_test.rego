package nova.platform.naming_test

import data.nova.platform.naming as rule

pre(name) := {"phase": "pre-plan", "contract": {"environment": "qa"}, "target": {"instances": [{"name": "table", "inputs": {"table_name": {"type": "string", "value": name}}}]}}

test_conforming_name_passes if {
	count(rule.findings) == 0 with input as pre("orders-qa-3b0c6f5e")
}

test_uppercase_and_missing_environment_fail if {
	f := rule.findings with input as pre("Orders_Table")
	some x in f
	x.resourceRef == "module.table"
	count(x.evidence.problems) == 2
}

test_plan_names_are_checked if {
	f := rule.findings with input as {"phase": "post-plan", "contract": {"environment": "qa"}, "plan": {"resource_changes": [
		{"address": "aws_s3_bucket.a", "mode": "managed", "type": "aws_s3_bucket", "change": {"actions": ["create"], "after": {"bucket": "assets-prod"}}},
		{"address": "aws_s3_bucket.b", "mode": "managed", "type": "aws_s3_bucket", "change": {"actions": ["create"], "after": {"bucket": "assets-qa"}}},
	]}}
	{x.resourceRef | some x in f} == {"aws_s3_bucket.a"}
}
