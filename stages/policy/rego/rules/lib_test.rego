package nova.lib_test

import data.nova.lib

test_pointer_escapes_rfc6901 if {
	lib.pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"
}

test_changes_keep_creates_and_updates_only if {
	got := object.keys(lib.changes) with input as {"plan": {"resource_changes": [
		{"address": "a.new", "mode": "managed", "change": {"actions": ["create"]}},
		{"address": "a.changed", "mode": "managed", "change": {"actions": ["update"]}},
		{"address": "a.replaced", "mode": "managed", "change": {"actions": ["delete", "create"]}},
		{"address": "a.gone", "mode": "managed", "change": {"actions": ["delete"]}},
		{"address": "a.same", "mode": "managed", "change": {"actions": ["no-op"]}},
		{"address": "data.a.read", "mode": "data", "change": {"actions": ["read"]}},
	]}}
	got == {"a.new", "a.changed", "a.replaced"}
}

test_unknown_counts_as_set if {
	rc := {"change": {"after": {}, "after_unknown": {"kms_key_id": true}}}
	lib.set_at(rc, ["kms_key_id"])
}

test_empty_string_is_not_set if {
	rc := {"change": {"after": {"kms_key_id": ""}, "after_unknown": {}}}
	not lib.set_at(rc, ["kms_key_id"])
}

test_sensitive_covers_nested_values if {
	rc := {"change": {"after_sensitive": {"input": {"password": true}}}}
	lib.sensitive(rc, ["input", "password"])
	not lib.sensitive(rc, ["input", "user"])
	lib.sensitive({"change": {"after_sensitive": {"input": true}}}, ["input", "password"])
}

test_changes_key_a_repeated_address_by_its_place if {
	got := object.keys(lib.changes) with input as {"plan": {"resource_changes": [
		{"address": "a.twice", "mode": "managed", "change": {"actions": ["create"]}},
		{"address": "a.once", "mode": "managed", "change": {"actions": ["create"]}},
		{"address": "a.twice", "mode": "managed", "change": {"actions": ["update"]}},
		# A deposed object being destroyed shares its address with the
		# current one in real plans; it is not a change kept here.
		{"address": "a.once", "mode": "managed", "deposed": "00000001", "change": {"actions": ["delete"]}},
	]}}
	got == {"a.twice (resource_changes[0])", "a.once", "a.twice (resource_changes[2])"}
}

test_a_stack_without_instances_has_none if {
	count(lib.instances) == 0 with input as {"target": {"instances": null}}
	count(lib.instances) == 0 with input as {}
}
