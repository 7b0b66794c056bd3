# A consumer's plan policies in conftest's convention: `conftest test -p
# policy plan.json` evaluates them the same way Nova does after plan.
package main

deny contains msg if {
	some rc in input.resource_changes
	rc.type == "aws_ecs_service"
	rc.change.after.desired_count < 3
	msg := sprintf("%s: run at least 3 tasks, not %d", [rc.address, rc.change.after.desired_count])
}

# METADATA
# custom:
#   severity: critical
deny_public_ip contains msg if {
	some rc in input.resource_changes
	rc.type == "aws_ecs_service"
	some nc in rc.change.after.network_configuration
	nc.assign_public_ip
	msg := sprintf("%s: tasks must not get public IPs", [rc.address])
}

warn contains msg if {
	some rc in input.resource_changes
	rc.type == "aws_dynamodb_table"
	rc.change.after.billing_mode == "PAY_PER_REQUEST"
	msg := sprintf("%s: on-demand billing; consider provisioned capacity for a steady load", [rc.address])
}

# METADATA
# custom:
#   severity: medium
violation contains {"msg": msg, "resourceRef": rc.address, "team": "orders"} if {
	some rc in input.resource_changes
	rc.type == "aws_cloudwatch_log_group"
	rc.change.after.retention_in_days < 365
	msg := sprintf("%s: keep logs for a year", [rc.address])
}
