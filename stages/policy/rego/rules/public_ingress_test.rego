package nova.platform.public_ingress_test

import data.nova.platform.public_ingress as rule

pre(inputs, instances) := {"phase": "pre-plan", "contract": {"inputs": inputs}, "target": {"instances": instances}}

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

sg(addr, ingress) := {"address": addr, "mode": "managed", "type": "aws_security_group", "change": {"actions": ["create"], "after": {"ingress": ingress}}}

test_contract_cidr_open_to_the_world_fails if {
	f := rule.findings with input as pre({"allowed_cidrs": ["10.0.0.0/8", "0.0.0.0/0"]}, [])
	{x.resourceRef | some x in f} == {"contract:/inputs/allowed_cidrs/1"}
}

test_public_task_ip_fails if {
	f := rule.findings with input as pre({}, [{"name": "service", "inputs": {"assign_public_ip": {"type": "bool", "value": true}}}])
	{x.resourceRef | some x in f} == {"module.service"}
}

test_private_inputs_pass if {
	count(rule.findings) == 0 with input as pre({"allowed_cidrs": ["10.0.0.0/8"]}, [{"name": "service", "inputs": {"assign_public_ip": {"type": "bool", "value": false}}}])
}

test_ssh_open_to_the_world_fails if {
	f := rule.findings with input as post([sg("aws_security_group.ssh", [{"cidr_blocks": ["0.0.0.0/0"], "ipv6_cidr_blocks": ["::/0"], "from_port": 22, "to_port": 22, "protocol": "tcp"}])])
	{x.evidence.cidr | some x in f} == {"0.0.0.0/0", "::/0"}
}

test_https_open_to_the_world_is_left_to_the_lb_rule if {
	count(rule.findings) == 0 with input as post([sg("aws_security_group.web", [{"cidr_blocks": ["0.0.0.0/0"], "from_port": 443, "to_port": 443, "protocol": "tcp"}])])
}

test_standalone_rules_fail if {
	f := rule.findings with input as post([
		{"address": "aws_security_group_rule.all", "mode": "managed", "type": "aws_security_group_rule", "change": {"actions": ["create"], "after": {"type": "ingress", "cidr_blocks": ["0.0.0.0/0"], "from_port": 0, "to_port": 0}}},
		{"address": "aws_vpc_security_group_ingress_rule.db", "mode": "managed", "type": "aws_vpc_security_group_ingress_rule", "change": {"actions": ["create"], "after": {"cidr_ipv4": "0.0.0.0/0", "from_port": 5432, "to_port": 5432}}},
		{"address": "aws_security_group_rule.egress", "mode": "managed", "type": "aws_security_group_rule", "change": {"actions": ["create"], "after": {"type": "egress", "cidr_blocks": ["0.0.0.0/0"], "from_port": 0, "to_port": 0}}},
	])
	{x.resourceRef | some x in f} == {"aws_security_group_rule.all", "aws_vpc_security_group_ingress_rule.db"}
}

test_private_security_group_passes if {
	count(rule.findings) == 0 with input as post([sg("aws_security_group.internal", [{"cidr_blocks": ["10.0.0.0/16"], "from_port": 22, "to_port": 22}])])
}
