package nova.platform.iam_wildcard_test

import data.nova.platform.iam_wildcard as rule

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

policy(addr, doc) := {"address": addr, "mode": "managed", "type": "aws_iam_role_policy", "change": {"actions": ["create"], "after": {"policy": json.marshal(doc)}}}

test_star_action_and_resource_fail if {
	f := rule.findings with input as post([policy("aws_iam_role_policy.admin", {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})])
	some x in f
	x.resourceRef == "aws_iam_role_policy.admin"
	count(x.evidence.problems) == 2
}

test_service_wildcard_fails if {
	f := rule.findings with input as post([policy("aws_iam_role_policy.s3", {"Statement": {"Effect": "Allow", "Action": ["s3:*"], "Resource": "arn:aws:s3:::b"}})])
	count(f) == 1
}

test_scoped_policy_and_star_only_actions_pass if {
	count(rule.findings) == 0 with input as post([policy("aws_iam_role_policy.exec", {"Statement": [
		{"Effect": "Allow", "Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Resource": ["arn:aws:logs:eu-west-1:123456789012:log-group:/ecs/x:*"]},
		{"Effect": "Allow", "Action": ["ecr:GetAuthorizationToken"], "Resource": ["*"]},
		{"Effect": "Deny", "Action": "*", "Resource": "*"},
	]})])
}

test_wildcard_action_input_fails if {
	f := rule.findings with input as {"phase": "pre-plan", "target": {"instances": [{"name": "svc", "inputs": {"task_actions": {"type": "list(string)", "value": ["dynamodb:*", "s3:GetObject"]}}}]}}
	some x in f
	x.evidence.wildcards == ["dynamodb:*"]
}
