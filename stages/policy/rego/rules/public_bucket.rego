# Public buckets: object storage readable or writable by anyone.
package nova.platform.public_bucket

import data.nova.lib

rule := {"id": "nova.storage.public-bucket", "severity": "critical", "title": "Public buckets"}

public_acls := {"public-read", "public-read-write", "authenticated-read"}

block_settings := {"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"}

# --- pre-plan: what a module is asked to do ---------------------------------

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s sets %s = %v, which makes its bucket public", [inst.name, name, value]),
	"evidence": {"input": name},
} if {
	lib.pre_plan
	some inst in lib.instances
	some name, b in object.get(inst, "inputs", {})
	value := b.value
	makes_public(name, value)
}

makes_public(name, value) if {
	name in {"acl", "bucket_acl", "canned_acl"}
	value in public_acls
}

makes_public(name, value) if {
	name in block_settings | {"block_public_access"}
	lib.falsy(value)
}

makes_public(name, value) if {
	regex.match(`^(public|public_read|public_access|allow_public_access)$`, name)
	lib.truthy(value)
}

# --- post-plan --------------------------------------------------------------

s3_types := {"aws_s3_bucket", "aws_s3_bucket_acl", "aws_s3_bucket_public_access_block", "aws_s3_bucket_policy"}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s grants the canned ACL %s", [addr, acl]),
	"evidence": {"attribute": "acl", "acl": acl},
} if {
	lib.post_plan
	some type in {"aws_s3_bucket", "aws_s3_bucket_acl"}
	some addr, rc in lib.by_type[type]
	acl := object.get(lib.after(rc), "acl", "")
	acl in public_acls
}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s turns off %s", [addr, concat(", ", sort(off))]),
	"evidence": {"off": sort(off)},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_s3_bucket_public_access_block
	off := {s | some s in block_settings; not lib.truthy(object.get(lib.after(rc), s, false))}
	count(off) > 0
}

# A bucket policy that allows anyone, unconditionally.
findings contains {
	"resourceRef": addr,
	"message": sprintf("%s allows principal \"*\" without a condition (statement %v)", [addr, i]),
	"evidence": {"attribute": "policy", "statement": i},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_s3_bucket_policy
	doc := json.unmarshal(lib.after(rc).policy)
	some i, st in statements(doc)
	st.Effect == "Allow"
	anyone(st.Principal)
	not st.Condition
}

statements(doc) := doc.Statement if is_array(doc.Statement)

statements(doc) := [doc.Statement] if is_object(doc.Statement)

anyone(p) if p == "*"

anyone(p) if p.AWS == "*"

anyone(p) if "*" in p.AWS

checked := count(lib.instances) if lib.pre_plan

checked := lib.count_of_types(s3_types) if lib.post_plan
