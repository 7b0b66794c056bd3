package nova.platform.tags_test

import data.nova.platform.tags as rule

contract := {"id": "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", "environment": "dev"}

good := {"nova:owner": "team-a", "nova:environment": "dev", "nova:contract": "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", "nova:cost-center": "cc-1"}

pre(tags) := {"phase": "pre-plan", "contract": contract, "target": {"instances": [{"name": "message", "inputs": {"tags": {"type": "map(string)", "value": tags}}}]}}

post(after) := {"phase": "post-plan", "contract": contract, "plan": {"resource_changes": [{"address": "aws_s3_bucket.b", "mode": "managed", "type": "aws_s3_bucket", "change": {"actions": ["create"], "after": after, "after_unknown": {}}}]}}

test_missing_tags_fail if {
	f := rule.findings with input as pre({"nova:environment": "dev", "nova:contract": contract.id})
	some x in f
	x.resourceRef == "module.message"
	x.evidence.problems == ["missing nova:cost-center", "missing nova:owner"]
}

test_wrong_environment_fails if {
	f := rule.findings with input as pre(object.union(good, {"nova:environment": "prod"}))
	some x in f
	x.evidence.problems == [`nova:environment is "prod", want "dev"`]
}

test_complete_tags_pass if {
	count(rule.findings) == 0 with input as pre(good)
}

test_tags_all_includes_default_tags if {
	count(rule.findings) == 0 with input as post({"tags": {"Name": "b"}, "tags_all": object.union(good, {"Name": "b"})})
	count(rule.findings) == 1 with input as post({"tags": good, "tags_all": {"Name": "b"}})
}

test_untaggable_resources_are_not_checked if {
	rule.checked == 0 with input as {"phase": "post-plan", "contract": contract, "plan": {"resource_changes": [{"address": "terraform_data.x", "mode": "managed", "type": "terraform_data", "change": {"actions": ["create"], "after": {"input": {}}}}]}}
}
