# Naming convention: names of things that live in the account are
# lowercase words joined by hyphens and carry the environment they belong
# to, so that two environments can never collide or be mistaken.
package nova.platform.naming

import data.nova.lib

rule := {"id": "nova.naming.convention", "severity": "low", "title": "Naming convention"}

pattern := `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`

# problems lists what is wrong with one name.
problems(name) := shape | env if {
	shape := {"use lowercase letters, digits and hyphens" | not regex.match(pattern, name)}
	env := {sprintf("include the environment %q as a hyphen-separated word", [lib.environment]) |
		lib.environment != ""
		not lib.environment in split(name, "-")
	}
}

name_input(n) if n == "name"

name_input(n) if endswith(n, "_name")

# --- pre-plan ---------------------------------------------------------------

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s input %s = %q: %s", [inst.name, input_name, value, concat("; ", sort(ps))]),
	"evidence": {"input": input_name, "value": value, "problems": sort(ps)},
} if {
	lib.pre_plan
	some inst in lib.instances
	some input_name, b in object.get(inst, "inputs", {})
	name_input(input_name)
	value := b.value
	is_string(value)
	ps := problems(value)
	count(ps) > 0
}

# --- post-plan --------------------------------------------------------------

# name_attribute maps a resource type to the attribute that names it.
name_attribute := {
	"aws_s3_bucket": "bucket",
	"aws_dynamodb_table": "name",
	"aws_ecs_service": "name",
	"aws_ecs_task_definition": "family",
	"aws_lb": "name",
	"aws_alb": "name",
	"aws_sqs_queue": "name",
	"aws_sns_topic": "name",
	"aws_db_instance": "identifier",
	"aws_lambda_function": "function_name",
}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s %s = %q: %s", [addr, attr, value, concat("; ", sort(ps))]),
	"evidence": {"attribute": attr, "value": value, "problems": sort(ps)},
} if {
	lib.post_plan
	some type, attr in name_attribute
	some addr, rc in lib.by_type[type]
	value := object.get(lib.after(rc), attr, null)
	is_string(value)
	ps := problems(value)
	count(ps) > 0
}

checked := count({[inst.name, n] | some inst in lib.instances; some n, _ in object.get(inst, "inputs", {}); name_input(n)}) if lib.pre_plan

checked := lib.count_of_types(object.keys(name_attribute)) if lib.post_plan
