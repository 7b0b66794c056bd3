# Tag compliance: every taggable resource says who owns it, where it runs,
# which contract created it and who pays for it.
package nova.platform.tags

import data.nova.lib

rule := {"id": "nova.tags.required", "severity": "medium", "title": "Required nova:* tags"}

required := {"nova:owner", "nova:environment", "nova:contract", "nova:cost-center"}

# problems lists what is wrong with one tag map.
problems(tags) := missing | mismatched if {
	missing := {sprintf("missing %s", [k]) | some k in required; object.get(tags, k, "") == ""}
	mismatched := {sprintf("%s is %q, want %q", [k, tags[k], want]) |
		some k, want in expected
		want != ""
		tags[k] != ""
		tags[k] != want
	}
}

expected := {"nova:environment": lib.environment, "nova:contract": lib.contract_id}

# --- pre-plan: the tags each module instance is given ------------------------

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s tags: %s", [inst.name, concat("; ", sort(ps))]),
	"evidence": {"input": "tags", "problems": sort(ps)},
} if {
	lib.pre_plan
	some inst in lib.instances
	tags := lib.bound(inst, "tags")
	is_object(tags)
	ps := problems(tags)
	count(ps) > 0
}

# --- post-plan: the tags each taggable resource ends up with ----------------

# Taggable: the resource has a tags attribute. tags_all adds the provider's
# default_tags and is what AWS applies; it is unknown only when a tag value
# is, and then tags is the best known view.
taggable[addr] := tags if {
	some addr, rc in lib.changes
	a := object.get(rc.change, "after", {}) # lib.after, spelt out: it runs for every change
	# The key is there, whatever its value (null included).
	_ = a.tags
	tags := effective_tags(rc, a)
}

effective_tags(rc, a) := tags_or_empty(a) if {
	object.get(rc.change, ["after_unknown", "tags_all"], false) == true # lib.unknown(rc, ["tags_all"])
} else := a.tags_all if {
	is_object(a.tags_all)
} else := tags_or_empty(a)

tags_or_empty(a) := a.tags if {
	is_object(a.tags)
} else := {}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s tags: %s", [addr, concat("; ", sort(ps))]),
	"evidence": {"attribute": "tags_all", "problems": sort(ps)},
} if {
	lib.post_plan
	some addr, tags in taggable
	ps := problems(tags)
	count(ps) > 0
}

checked := count({inst.name | some inst in lib.instances; is_object(lib.bound(inst, "tags"))}) if lib.pre_plan

checked := count(taggable) if lib.post_plan
