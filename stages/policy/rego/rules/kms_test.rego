package nova.platform.kms_test

import data.nova.platform.kms as rule

key := "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

rc(addr, type, after, unknown) := {"address": addr, "mode": "managed", "type": type, "change": {"actions": ["create"], "after": after, "after_unknown": unknown}}

test_empty_key_in_contract_fails if {
	f := rule.findings with input as {"phase": "pre-plan", "contract": {"inputs": {"kms_key_arn": ""}}, "target": {"instances": [{"name": "assets", "inputs": {"kms_key_arn": {"type": "string", "value": ""}}}]}}
	{x.resourceRef | some x in f} == {"contract:/inputs/kms_key_arn"}
}

test_stack_binding_without_key_fails if {
	f := rule.findings with input as {"phase": "pre-plan", "contract": {"inputs": {}}, "target": {"instances": [{"name": "logs", "inputs": {"kms_key_id": {"type": "string", "value": "aws/logs"}}}]}}
	{x.resourceRef | some x in f} == {"module.logs"}
}

test_key_references_pass if {
	count(rule.findings) == 0 with input as {"phase": "pre-plan", "contract": {"inputs": {"kms_key_arn": key}}, "target": {"instances": [
		{"name": "a", "inputs": {"kms_key_arn": {"type": "string", "value": key}}},
		{"name": "b", "inputs": {"kms_key_id": {"type": "string", "value": "alias/app"}}},
	]}}
}

test_store_without_key_fails if {
	f := rule.findings with input as post([
		rc("aws_dynamodb_table.t", "aws_dynamodb_table", {"server_side_encryption": [{"enabled": true}]}, {}),
		rc("aws_cloudwatch_log_group.l", "aws_cloudwatch_log_group", {"kms_key_id": null}, {}),
	])
	{x.resourceRef | some x in f} == {"aws_dynamodb_table.t", "aws_cloudwatch_log_group.l"}
}

test_key_known_after_apply_passes if {
	count(rule.findings) == 0 with input as post([rc("aws_sqs_queue.q", "aws_sqs_queue", {}, {"kms_master_key_id": true})])
}

test_s3_without_sse_kms_fails if {
	f := rule.findings with input as post([rc(
		"aws_s3_bucket_server_side_encryption_configuration.this", "aws_s3_bucket_server_side_encryption_configuration",
		{"rule": [{"apply_server_side_encryption_by_default": [{"sse_algorithm": "AES256", "kms_master_key_id": null}]}]}, {},
	)])
	count(f) == 2
}
