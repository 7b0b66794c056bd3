# Public ingress: network access opened to the whole internet.
package nova.platform.public_ingress

import data.nova.lib

rule := {"id": "nova.network.public-ingress", "severity": "high", "title": "Ingress open to 0.0.0.0/0 or ::/0"}

# Web ports are left to nova.network.public-lb: a public HTTPS endpoint is
# a decision, an SSH port open to the world is a mistake.
web_ports := {80, 443}

open_port_range(from, to) if not web_range(from, to)

web_range(from, to) if {
	from == to
	from in web_ports
}

# --- pre-plan ---------------------------------------------------------------

findings contains {
	"resourceRef": lib.contract_input_ref(leaf.path),
	"message": sprintf("input %s opens ingress to %s", [lib.dotted(leaf.path), leaf.value]),
	"evidence": {"field": lib.dotted(leaf.path), "cidr": leaf.value},
} if {
	lib.pre_plan
	some leaf in lib.contract_leaves
	leaf.value in lib.open_cidrs
}

findings contains {
	"resourceRef": lib.module_ref(leaf.instance),
	"message": sprintf("instance %s input %s opens ingress to %s", [leaf.instance, lib.dotted(leaf.path), leaf.value]),
	"evidence": {"input": lib.dotted(leaf.path), "cidr": leaf.value},
} if {
	lib.pre_plan
	some leaf in lib.instance_leaves
	leaf.value in lib.open_cidrs
	not leaf.value in lib.contract_strings
}

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s gives its tasks a public IP address (assign_public_ip)", [inst.name]),
	"evidence": {"input": "assign_public_ip"},
} if {
	lib.pre_plan
	some inst in lib.instances
	lib.truthy(lib.bound(inst, "assign_public_ip"))
}

# --- post-plan --------------------------------------------------------------

sg_types := {"aws_security_group", "aws_security_group_rule", "aws_vpc_security_group_ingress_rule", "aws_ecs_service", "aws_db_instance", "aws_instance"}

# Inline ingress blocks of a security group.
findings contains open_finding(addr, cidr, rule_in.from_port, rule_in.to_port) if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_security_group
	some rule_in in object.get(lib.after(rc), "ingress", [])
	some cidr in open_cidrs_of(rule_in)
	open_port_range(rule_in.from_port, rule_in.to_port)
}

findings contains open_finding(addr, cidr, a.from_port, a.to_port) if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_security_group_rule
	a := lib.after(rc)
	a.type == "ingress"
	some cidr in open_cidrs_of(a)
	open_port_range(a.from_port, a.to_port)
}

findings contains open_finding(addr, cidr, object.get(a, "from_port", -1), object.get(a, "to_port", -1)) if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_vpc_security_group_ingress_rule
	a := lib.after(rc)
	some cidr in {object.get(a, "cidr_ipv4", ""), object.get(a, "cidr_ipv6", "")}
	cidr in lib.open_cidrs
	open_port_range(object.get(a, "from_port", -1), object.get(a, "to_port", -1))
}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s assigns public IP addresses to its tasks", [addr]),
	"evidence": {"attribute": "network_configuration.assign_public_ip"},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_ecs_service
	some nc in object.get(lib.after(rc), "network_configuration", [])
	lib.truthy(object.get(nc, "assign_public_ip", false))
}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s is reachable from the internet (%s)", [addr, attr]),
	"evidence": {"attribute": attr},
} if {
	lib.post_plan
	some type, attr in public_address_attribute
	some addr, rc in lib.by_type[type]
	lib.truthy(object.get(lib.after(rc), attr, false))
}

public_address_attribute := {"aws_db_instance": "publicly_accessible", "aws_instance": "associate_public_ip_address"}

open_cidrs_of(block) := {cidr |
	some key in ["cidr_blocks", "ipv6_cidr_blocks"]
	some cidr in object.get(block, key, [])
	cidr in lib.open_cidrs
}

open_finding(addr, cidr, from, to) := {
	"resourceRef": addr,
	"message": sprintf("%s allows ingress from %s on ports %v-%v", [addr, cidr, from, to]),
	"evidence": {"cidr": cidr, "fromPort": from, "toPort": to},
}

checked := count(lib.instances) if lib.pre_plan

checked := lib.count_of_types(sg_types) if lib.post_plan
