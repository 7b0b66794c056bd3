# Helpers shared by the platform rules. Every platform rule lives in a
# package under nova.platform and defines:
#
#   rule      {"id", "severity", "title"}: what the rule is
#   findings  a set of {"resourceRef", "message", "evidence"}: its violations
#   checked   how many things it looked at, reported with a pass
#
# The engine turns each finding into a fail record and a rule without
# findings into one pass record.
package nova.lib

pre_plan if input.phase == "pre-plan"

post_plan if input.phase == "post-plan"

# --- references -----------------------------------------------------------

# str renders a path element (a key or an index) as text.
str(x) := x if is_string(x)

str(x) := sprintf("%v", [x]) if not is_string(x)

# pointer renders a path as an RFC 6901 JSON pointer.
pointer(path) := concat("", [sprintf("/%s", [escape(str(p))]) | some p in path])

escape(s) := replace(replace(s, "~", "~0"), "/", "~1")

# dotted renders a path for messages: environment_variables.DB_PASSWORD.
dotted(path) := concat(".", [str(p) | some p in path])

contract_input_ref(path) := concat("", ["contract:/inputs", pointer(path)])

module_ref(instance) := concat(".", ["module", instance])

# last_key is the name a leaf is stored under: the last string in its path.
last_key(path) := k if {
	k := path[count(path) - 1]
	is_string(k)
}

last_key(path) := "" if {
	count(path) > 0
	not is_string(path[count(path) - 1])
}

# --- the contract and the target stack (pre-plan) -------------------------

contract_inputs := object.get(input, ["contract", "inputs"], {})

environment := object.get(input, ["contract", "environment"], "")

contract_id := object.get(input, ["contract", "id"], "")

# contract_leaves: every scalar the contract's inputs hold, with its path.
contract_leaves contains {"path": path, "value": v} if {
	walk(contract_inputs, [path, v])
	count(path) > 0
	not is_object(v)
	not is_array(v)
}

contract_strings contains v if {
	some leaf in contract_leaves
	v := leaf.value
	is_string(v)
}

# A stack without instances may come as null: counting null is undefined,
# and a rule left without a result is an error, which blocks for a
# critical rule.
default instances := []

instances := v if {
	v := input.target.instances
	is_array(v)
}

# instance_leaves: every scalar bound to an instance input, with the input
# name first in its path.
instance_leaves contains {"instance": inst.name, "path": array.concat([name], p), "value": v} if {
	some inst in instances
	some name, bound in object.get(inst, "inputs", {})
	walk(bound.value, [p, v])
	not is_object(v)
	not is_array(v)
}

# bound returns an instance's value for an input, when the stack binds it.
bound(inst, name) := inst.inputs[name].value

# --- the plan (post-plan) ---------------------------------------------------

# changes: managed resources the plan creates or updates, by address. Deletes
# and no-ops are left out: a rule judges what the change puts in place.
# The key is the resource's address, and the resourceRef of its findings.
#
# Every rule reads it, so it is written for speed: one comprehension with
# changed() spelt out (a function call per resource, and a partial rule's
# per-entry bookkeeping, cost more than the rest of it on a large plan).
default changes := {}

changes := {addr: rc |
	some rc in resource_changes
	rc.mode == "managed"
	some action in rc.change.actions
	action in {"create", "update"}
	addr := rc.address
} if count(repeated) == 0 # the plans Terraform writes: no per-entry lookup

# Terraform lists an address once among these, but a plan handed to
# `nova policy --plan` may list it twice. Keyed by address alone, two
# entries would be a conflict that stops every rule from evaluating (and
# keeping only one would let the other hide a violation), so an address
# that occurs more than once is keyed by its place in resource_changes too.
changes := {key: rc |
	some i, rc in resource_changes
	changed(rc)
	key := change_key(rc.address, i)
} if count(repeated) > 0

resource_changes := object.get(input, ["plan", "resource_changes"], [])

changed(rc) if {
	rc.mode == "managed"
	some action in rc.change.actions
	action in {"create", "update"}
}

# repeated: the changed addresses that occur more than once, found by
# comparing neighbours after sorting; counting each address's occurrences
# would be quadratic on a plan of thousands of changes.
repeated := {addr |
	sorted := sort([rc.address | some rc in resource_changes; changed(rc)])
	some i, addr in sorted
	i > 0
	addr == sorted[i - 1]
}

change_key(addr, _) := addr if not addr in repeated

change_key(addr, i) := sprintf("%s (resource_changes[%d])", [addr, i]) if addr in repeated

# by_type indexes changes by resource type, so that a rule about one type
# does not scan the whole plan.
by_type[type][addr] := rc if {
	some addr, rc in changes
	type := rc.type
}

# count_of_types counts the changes of the given types.
count_of_types(types) := sum([count(object.get(by_type, t, {})) | some t in types])

after(rc) := object.get(rc.change, "after", {})

# unknown: the value at path is computed during apply. A reference that is
# unknown at plan time is still a reference, so rules treat it as set.
unknown(rc, path) if object.get(rc.change, array.concat(["after_unknown"], path), false) == true

# set_at: the attribute holds a non-empty value, now or after apply.
set_at(rc, path) if unknown(rc, path)

set_at(rc, path) if {
	v := object.get(after(rc), path, null)
	v != null
	v != ""
}

# sensitive: Terraform masks the value at path (or an enclosing one).
sensitive(rc, path) if {
	some i in numbers.range(0, count(path))
	object.get(rc.change, array.concat(["after_sensitive"], array.slice(path, 0, i)), false) == true
}

# --- values -----------------------------------------------------------------

open_cidrs := {"0.0.0.0/0", "::/0"}

truthy(v) if v == true

truthy(v) if v == "true"

falsy(v) if v == false

falsy(v) if v == "false"
