package nova.platform.secrets_test

import data.nova.platform.secrets

pre(inputs, instances) := {"phase": "pre-plan", "contract": {"inputs": inputs}, "target": {"instances": instances}}

test_contract_input_named_like_a_secret_fails if {
	f := secrets.findings with input as pre({"db_password": "hunter2"}, [])
	some x in f
	x.resourceRef == "contract:/inputs/db_password"
	x.evidence.matched == "name"
	not contains(x.message, "hunter2")
}

test_nested_environment_variable_fails if {
	f := secrets.findings with input as pre({"environment_variables": {"API_TOKEN": "abc"}}, [])
	{x.resourceRef | some x in f} == {"contract:/inputs/environment_variables/API_TOKEN"}
}

test_secret_shaped_value_fails_whatever_its_name if {
	f := secrets.findings with input as pre({"note": "AKIAABCDEFGHIJKLMNOP"}, [])
	some x in f
	x.evidence.matched == "aws-access-key"
}

test_references_and_reference_names_pass if {
	count(secrets.findings) == 0 with input as pre({
		"db_password": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:db",
		"api_token": "ssm:/prod/api-token",
		"secret_name": "prod/db",
		"token_ttl": 300,
		"greeting": "Hello",
	}, [])
}

test_stack_literal_is_reported_at_the_instance if {
	f := secrets.findings with input as pre({}, [{"name": "db", "inputs": {"master_password": {"type": "string", "value": "changeme"}}}])
	{x.resourceRef | some x in f} == {"module.db"}
}

test_value_from_the_contract_is_reported_once if {
	f := secrets.findings with input as pre({"db_password": "hunter2"}, [{"name": "db", "inputs": {"password": {"type": "string", "value": "hunter2"}}}])
	count(f) == 1
}

post(rcs) := {"phase": "post-plan", "plan": {"resource_changes": rcs}}

test_plan_attribute_in_plaintext_fails if {
	f := secrets.findings with input as post([{
		"address": "terraform_data.creds", "mode": "managed", "type": "terraform_data",
		"change": {"actions": ["create"], "after": {"input": {"password": "hunter2"}}, "after_sensitive": {}, "after_unknown": {}},
	}])
	{x.resourceRef | some x in f} == {"terraform_data.creds"}
}

test_sensitive_plan_attribute_passes if {
	count(secrets.findings) == 0 with input as post([{
		"address": "aws_db_instance.db", "mode": "managed", "type": "aws_db_instance",
		"change": {"actions": ["create"], "after": {"password": "from-a-variable"}, "after_sensitive": {"password": true}, "after_unknown": {}},
	}])
}

test_container_environment_secret_fails if {
	defs := json.marshal([{"name": "app", "environment": [{"name": "DB_PASSWORD", "value": "hunter2"}, {"name": "TABLE_NAME", "value": "t"}]}])
	f := secrets.findings with input as post([{
		"address": "aws_ecs_task_definition.this", "mode": "managed", "type": "aws_ecs_task_definition",
		"change": {"actions": ["create"], "after": {"container_definitions": defs}, "after_unknown": {}},
	}])
	some x in f
	x.evidence.variable == "DB_PASSWORD"
}

test_checked_counts_what_was_looked_at if {
	secrets.checked == 2 with input as pre({"a": "x", "b": "y"}, [])
	secrets.checked == 0 with input as post([])
}
