# Public load balancers: an internet-facing entry point. Often intended,
# so the severity is medium: it lowers confidence and asks for a look.
package nova.platform.public_lb

import data.nova.lib

rule := {"id": "nova.network.public-lb", "severity": "medium", "title": "Public load balancers"}

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s asks for an internet-facing load balancer (%s = %v)", [inst.name, name, value]),
	"evidence": {"input": name},
} if {
	lib.pre_plan
	some inst in lib.instances
	some name, b in object.get(inst, "inputs", {})
	value := b.value
	internet_facing(name, value)
}

internet_facing(name, value) if {
	name in {"internal", "lb_internal"}
	lib.falsy(value)
}

internet_facing(name, value) if {
	name in {"scheme", "lb_scheme", "load_balancer_scheme"}
	value == "internet-facing"
}

internet_facing(name, value) if {
	name in {"public_lb", "public_load_balancer", "internet_facing"}
	lib.truthy(value)
}

lb_types := {"aws_lb", "aws_alb", "aws_elb"}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s is internet-facing (internal = false)", [addr]),
	"evidence": {"attribute": "internal"},
} if {
	lib.post_plan
	some type in lb_types
	some addr, rc in lib.by_type[type]
	not lib.truthy(object.get(lib.after(rc), "internal", false))
	not lib.unknown(rc, ["internal"])
}

checked := count(lib.instances) if lib.pre_plan

checked := lib.count_of_types(lb_types) if lib.post_plan
