# Encryption at rest with a KMS key the platform controls: data stores must
# name a customer-managed key, not fall back to a provider-managed one.
package nova.platform.kms

import data.nova.lib

rule := {"id": "nova.encryption.kms-key", "severity": "high", "title": "KMS key reference for encryption at rest"}

# A reference to a KMS key: a key or alias ARN, an alias, a key id or a
# multi-Region key id.
key_reference(v) if regex.match(`^(arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/.+|alias/.+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$`, v)

kms_input(name) if regex.match(`^kms_(key|master_key)_(arn|id)$`, name)

# --- pre-plan ---------------------------------------------------------------

findings contains {
	"resourceRef": lib.contract_input_ref([name]),
	"message": sprintf("input %s is not a KMS key reference (a key or alias ARN, alias/NAME or a key id)", [name]),
	"evidence": {"field": name},
} if {
	lib.pre_plan
	some name, v in lib.contract_inputs
	kms_input(name)
	not key_reference(v)
}

findings contains {
	"resourceRef": lib.module_ref(inst.name),
	"message": sprintf("instance %s input %s is not a KMS key reference, so its data falls back to a provider-managed key", [inst.name, name]),
	"evidence": {"input": name},
} if {
	lib.pre_plan
	some inst in lib.instances
	some name, b in object.get(inst, "inputs", {})
	kms_input(name)
	not key_reference(b.value)
	not contract_supplied(b.value)
}

# A bad value the contract supplied is reported at the contract field.
contract_supplied(v) if {
	some name, cv in lib.contract_inputs
	kms_input(name)
	cv == v
}

# --- post-plan: each data store names a key ---------------------------------

# stores maps a resource type to the attribute paths that must hold a key.
stores := {
	"aws_cloudwatch_log_group": [["kms_key_id"]],
	"aws_sqs_queue": [["kms_master_key_id"]],
	"aws_sns_topic": [["kms_master_key_id"]],
	"aws_ebs_volume": [["kms_key_id"]],
	"aws_db_instance": [["kms_key_id"]],
	"aws_rds_cluster": [["kms_key_id"]],
	"aws_efs_file_system": [["kms_key_id"]],
	"aws_kinesis_stream": [["kms_key_id"]],
	"aws_dynamodb_table": [["server_side_encryption", 0, "kms_key_arn"]],
	"aws_s3_bucket_server_side_encryption_configuration": [["rule", 0, "apply_server_side_encryption_by_default", 0, "kms_master_key_id"]],
}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s does not name a KMS key (%s); encryption at rest falls back to a provider-managed key", [addr, lib.dotted(path)]),
	"evidence": {"attribute": lib.dotted(path)},
} if {
	lib.post_plan
	some type, paths in stores
	some addr, rc in lib.by_type[type]
	some path in paths
	not lib.set_at(rc, path)
}

# S3 must also use SSE-KMS for the key to matter.
findings contains {
	"resourceRef": addr,
	"message": sprintf("%s uses %s, not aws:kms", [addr, algo]),
	"evidence": {"attribute": "rule.0.apply_server_side_encryption_by_default.0.sse_algorithm", "algorithm": algo},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_s3_bucket_server_side_encryption_configuration
	algo := object.get(lib.after(rc), ["rule", 0, "apply_server_side_encryption_by_default", 0, "sse_algorithm"], "")
	not algo in {"aws:kms", "aws:kms:dsse"}
}

# Storage that is encrypted only when told to, and the flag that tells it.
encrypted_flag := {"aws_ebs_volume": "encrypted", "aws_db_instance": "storage_encrypted", "aws_rds_cluster": "storage_encrypted", "aws_efs_file_system": "encrypted"}

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s is not encrypted (%s = false)", [addr, attr]),
	"evidence": {"attribute": attr},
} if {
	lib.post_plan
	some type, attr in encrypted_flag
	some addr, rc in lib.by_type[type]
	not lib.truthy(object.get(lib.after(rc), attr, false))
	not lib.unknown(rc, [attr])
}

checked := count(lib.instances) if lib.pre_plan

checked := lib.count_of_types(object.keys(stores)) if lib.post_plan
