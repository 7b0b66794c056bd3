# IAM wildcards: a policy that allows every action of a service (or of
# all services), or an action on every resource.
package nova.platform.iam_wildcard

import data.nova.lib

rule := {"id": "nova.iam.wildcard", "severity": "high", "title": "IAM wildcard actions or resources"}

# Actions AWS only authorizes on Resource "*": a statement made of these
# alone cannot be narrowed, so it is not a finding.
resource_star_only := {
	"ecr:GetAuthorizationToken",
	"sts:GetCallerIdentity",
	"xray:PutTraceSegments",
	"xray:PutTelemetryRecords",
	"cloudwatch:PutMetricData",
	"logs:DescribeLogGroups",
}

wildcard_action(a) if a == "*"

wildcard_action(a) if regex.match(`^[A-Za-z0-9-]+:\*$`, a)

as_list(x) := x if is_array(x)

as_list(x) := [x] if is_string(x)

statements(doc) := doc.Statement if is_array(doc.Statement)

statements(doc) := [doc.Statement] if is_object(doc.Statement)

# problems lists what is wrong with one policy document, by statement.
problems(doc) := {p |
	some i, st in statements(doc)
	st.Effect == "Allow"
	some p in statement_problems(i, st)
}

statement_problems(i, st) := {sprintf("statement %v allows action %s", [i, a]) |
	some a in as_list(object.get(st, "Action", []))
	wildcard_action(a)
} | {sprintf("statement %v allows every action but a list (NotAction)", [i]) |
	object.get(st, "NotAction", null) != null
} | {sprintf("statement %v applies to every resource (\"*\")", [i]) |
	"*" in as_list(object.get(st, "Resource", []))
	some a in as_list(object.get(st, "Action", []))
	not a in resource_star_only
}

# --- pre-plan: policy documents and action lists bound to modules -----------

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s input %s: %s", [inst.name, name, concat("; ", sort(ps))]),
	"evidence": {"input": name, "problems": sort(ps)},
} if {
	lib.pre_plan
	some inst in lib.instances
	some name, b in object.get(inst, "inputs", {})
	is_string(b.value)
	regex.match(`(^|_)policy(_json|_document)?$`, name)
	ps := problems(json.unmarshal(b.value))
	count(ps) > 0
}

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s input %s grants wildcard %s", [inst.name, name, concat(", ", sort(ws))]),
	"evidence": {"input": name, "wildcards": sort(ws)},
} if {
	lib.pre_plan
	some inst in lib.instances
	some name, b in object.get(inst, "inputs", {})
	regex.match(`(^|_)(actions|resources)$`, name)
	ws := {w | some w in as_list(b.value); is_string(w); wildcard(name, w)}
	count(ws) > 0
}

wildcard(name, w) if {
	endswith(name, "actions")
	wildcard_action(w)
}

wildcard(name, w) if {
	endswith(name, "resources")
	w == "*"
}

# --- post-plan: the policies the plan creates -------------------------------

policy_types := {"aws_iam_policy", "aws_iam_role_policy", "aws_iam_user_policy", "aws_iam_group_policy"}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s: %s", [addr, concat("; ", sort(ps))]),
	"evidence": {"attribute": "policy", "problems": sort(ps)},
} if {
	lib.post_plan
	some type in policy_types
	some addr, rc in lib.by_type[type]
	ps := problems(json.unmarshal(lib.after(rc).policy))
	count(ps) > 0
}

# Inline policies of a role.
findings contains {
	"resourceRef": addr,
	"message": sprintf("%s inline policy %s: %s", [addr, object.get(ip, "name", "?"), concat("; ", sort(ps))]),
	"evidence": {"attribute": "inline_policy", "problems": sort(ps)},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_iam_role
	some ip in object.get(lib.after(rc), "inline_policy", [])
	ps := problems(json.unmarshal(ip.policy))
	count(ps) > 0
}

checked := count(lib.instances) if lib.pre_plan

checked := lib.count_of_types(policy_types | {"aws_iam_role"}) if lib.post_plan
