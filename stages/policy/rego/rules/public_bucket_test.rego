package nova.platform.public_bucket_test

import data.nova.platform.public_bucket as rule

pre(instances) := {"phase": "pre-plan", "contract": {}, "target": {"instances": instances}}

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

rc(addr, type, after) := {"address": addr, "mode": "managed", "type": type, "change": {"actions": ["create"], "after": after}}

test_public_acl_input_fails if {
	f := rule.findings with input as pre([{"name": "site", "inputs": {"acl": {"type": "string", "value": "public-read"}}}])
	{x.resourceRef | some x in f} == {"module.site"}
}

test_private_inputs_pass if {
	count(rule.findings) == 0 with input as pre([{"name": "assets", "inputs": {"acl": {"type": "string", "value": "private"}, "block_public_acls": {"type": "bool", "value": true}}}])
}

test_public_access_block_turned_off_fails if {
	f := rule.findings with input as post([rc("aws_s3_bucket_public_access_block.this", "aws_s3_bucket_public_access_block", {"block_public_acls": true, "block_public_policy": false, "ignore_public_acls": true, "restrict_public_buckets": false})])
	some x in f
	x.evidence.off == ["block_public_policy", "restrict_public_buckets"]
}

test_public_policy_fails_and_conditioned_deny_passes if {
	open := json.marshal({"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]})
	tls := json.marshal({"Statement": [{"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*", "Resource": "*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})
	f := rule.findings with input as post([
		rc("aws_s3_bucket_policy.open", "aws_s3_bucket_policy", {"policy": open}),
		rc("aws_s3_bucket_policy.tls", "aws_s3_bucket_policy", {"policy": tls}),
	])
	{x.resourceRef | some x in f} == {"aws_s3_bucket_policy.open"}
}

test_public_canned_acl_fails if {
	f := rule.findings with input as post([rc("aws_s3_bucket_acl.this", "aws_s3_bucket_acl", {"acl": "public-read-write"})])
	count(f) == 1
}
