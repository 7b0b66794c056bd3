# Secrets in plaintext: a value that is a credential, written where it ends
# up in the repository, the plan, the state and the evidence.
package nova.platform.secrets

import data.nova.lib

rule := {"id": "nova.secrets.plaintext", "severity": "critical", "title": "Secrets in plaintext"}

# Names that hold credentials. Names of references to a secret
# (db_password_arn, secret_name, token_ttl) are not credentials.
secret_name(k) if {
	regex.match(`(?i)(passw(or)?d|passphrase|secret|token|api[_-]?key|private[_-]?key|access[_-]?key|credential)`, k)
	not regex.match(`(?i)(_arn|_name|_id|_ref|_path|_file|_ttl|_version|_length|_count|_enabled|_type)$`, k)
}

# A value that points at a secret store rather than holding the secret.
reference(v) if regex.match(`^(arn:|\$\{|\{\{resolve:|ssm:|vault:|secretsmanager:|projects/[^/]+/secrets/)`, v)

# Shapes no legitimate non-secret value has, whatever its name. any_shape
# is their union: one match per value instead of one per shape on the hot
# path. Besides vendor token formats:
#   - a credential written as key=value (or key: value) inside a value:
#     "password=hunter2", "aws_secret_access_key = wJalr…";
#   - a URL carrying a password: "postgres://admin:S3cret@db/app".
# A value that is only a reference (${…}, $VAR, ssm:, arn:, <placeholder>)
# is not a secret, in either form.
kv_shape := `(?i)(?:^|[^a-z0-9])[a-z0-9_.-]*?(?:passw(?:or)?d|pwd|passphrase|secret|access[_-]?key|api[_-]?key|auth[_-]?token|token)\s*[:=]\s*["']?([^\s"'$<{&;,*]{4,})`

url_shape := `[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@$]*:([^/\s@$<{]{3,})@`

any_shape := concat("|", [
	`\b(AKIA|ASIA)[0-9A-Z]{16}\b`,
	`-----BEGIN ([A-Z]+ )*PRIVATE KEY-----`,
	`\bgh[pousr]_[A-Za-z0-9]{36}\b`,
	`\bxox[abprs]-[A-Za-z0-9-]{10,}`,
	`\bglpat-[A-Za-z0-9_-]{20}\b`,
	kv_shape,
	url_shape,
])

secret_shape(v) := "aws-access-key" if {
	regex.match(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`, v)
} else := "private-key" if {
	regex.match(`-----BEGIN ([A-Z]+ )*PRIVATE KEY-----`, v)
} else := "github-token" if {
	regex.match(`\bgh[pousr]_[A-Za-z0-9]{36}\b`, v)
} else := "slack-token" if {
	regex.match(`\bxox[abprs]-[A-Za-z0-9-]{10,}`, v)
} else := "gitlab-token" if {
	regex.match(`\bglpat-[A-Za-z0-9_-]{20}\b`, v)
} else := "url-password" if {
	regex.match(url_shape, v)
} else := "key-value-credential" if {
	not placeholder_only(v)
	regex.match(kv_shape, v)
}

# placeholder_only: every key=value credential in v names a placeholder
# ("changeme", "xxxx", "example") rather than a value.
placeholder_only(v) if {
	matches := regex.find_all_string_submatch_n(kv_shape, v, -1)
	count(matches) > 0
	every m in matches {
		placeholder(m[1])
	}
}

placeholder(x) if regex.match(`(?i)^(x{3,}|\*{3,}|redacted|changeme|example|none|null|true|false|yes|no|required|optional|set|unset|empty)$`, x)

# suspect is a cheap first look at a whole resource, as lowercased JSON
# text: does any word that credentials are named or shaped by occur at all?
# Only a suspect resource is walked value by value, which keeps a plan of
# hundreds of resources fast; substring tests are far cheaper here than one
# regular expression over the whole text.
# The rule's patterns are case-insensitive, and to Go's regexp "ſ" is an
# "s" (lower() leaves it as it is, and turns the Kelvin sign into "k").
suspect(after) if {
	text := lower(replace(json.marshal(after), "ſ", "s"))
	some word in suspect_words
	contains(text, word)
}

# suspects: the changes to walk.
suspects[addr] := rc if {
	some addr, rc in lib.changes
	suspect(lib.after(rc))
}

suspect_words := [
	"passw", "passphrase", "secret", "token", "apikey", "api_key", "api-key",
	"private_key", "private-key", "privatekey", "access_key", "access-key", "accesskey", "credential",
	"akia", "asia", "private key-----", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "glpat-",
	"pwd", "auth", "://",
]

# named: a credential by its name, the first reason why gives.
named(key, v) if {
	v != ""
	is_string(key)
	secret_name(key)
	not reference(v)
}

# why says why a string leaf stored under key is a secret: its name or its
# shape. Never the value. Undefined when it is not one.
why(key, v) := "name" if {
	named(key, v)
} else := shape if {
	regex.match(any_shape, v)
	shape := secret_shape(v)
} else := "named-token" if {
	# A credential's name next to a random-looking value inside a longer
	# text: a 40-character AWS secret access key (or any long token) said
	# to be one ("aws secret: wJalrXUtnFEMI/K7MDENG…").
	some m in regex.find_all_string_submatch_n(`(?i)(?:secret|token|credential|passw(?:or)?d|api[_-]?key|access[_-]?key)[^A-Za-z0-9]+(?:(?:is|was|are|of|for)[^A-Za-z0-9]+)?([A-Za-z0-9/+=_-]{20,})`, v, -1)
	random_looking(m[1])
}

# random_looking: mixed case and digits, and many distinct characters —
# what a generated key is and an English word or an identifier is not.
random_looking(s) if {
	regex.match(`[a-z]`, s)
	regex.match(`[A-Z]`, s)
	regex.match(`[0-9]`, s)
	count({c | some c in split(s, "")}) >= 14
}

# --- pre-plan: the contract's inputs, then what the stack binds -------------

findings contains {
	"resourceRef": lib.contract_input_ref(leaf.path),
	"message": sprintf("input %s holds a secret in plaintext (%s); reference a secret store instead (an ARN, ssm:, vault:)", [lib.dotted(leaf.path), reason]),
	"evidence": {"field": lib.dotted(leaf.path), "matched": reason},
} if {
	lib.pre_plan
	some leaf in lib.contract_leaves
	is_string(leaf.value)
	reason := why(lib.last_key(leaf.path), leaf.value)
}

# A value the stack itself binds (a literal or a default in the registry):
# values that came from the contract were reported above.
findings contains {
	"resourceRef": lib.module_ref(leaf.instance),
	"message": sprintf("instance %s input %s holds a secret in plaintext (%s)", [leaf.instance, lib.dotted(leaf.path), reason]),
	"evidence": {"input": lib.dotted(leaf.path), "matched": reason},
} if {
	lib.pre_plan
	some leaf in lib.instance_leaves
	is_string(leaf.value)
	not leaf.value in lib.contract_strings
	reason := why(lib.last_key(leaf.path), leaf.value)
}

# --- post-plan: attribute values the plan writes ----------------------------

findings contains {
	"resourceRef": addr,
	"message": sprintf("%s: attribute %s holds a secret in plaintext (%s)", [addr, lib.dotted(path), reason]),
	"evidence": {"attribute": lib.dotted(path), "matched": reason},
} if {
	lib.post_plan
	some addr, rc in suspects
	walk(lib.after(rc), [path, v])
	is_string(v)
	reason := why(path[count(path) - 1], v)
	# A value Terraform already masks as sensitive is not written out in
	# plain text; only its shape (a real key pasted in) still counts.
	plain_or_shaped(rc, path, reason)
}

# ECS container definitions are JSON in a string: environment entries are
# {"name": ..., "value": ...} pairs that would otherwise go unseen.
findings contains {
	"resourceRef": addr,
	"message": sprintf("%s: container environment variable %s holds a secret in plaintext; use the container's secrets with a Secrets Manager or SSM reference", [addr, entry.name]),
	"evidence": {"attribute": "container_definitions", "variable": entry.name, "matched": "name"},
} if {
	lib.post_plan
	some addr, rc in lib.by_type.aws_ecs_task_definition
	defs := json.unmarshal(lib.after(rc).container_definitions)
	some def in defs
	some entry in object.get(def, "environment", [])
	named(entry.name, entry.value)
}

plain_or_shaped(rc, path, _) if not lib.sensitive(rc, path)

plain_or_shaped(_, _, reason) if reason != "name"

checked := count(lib.contract_leaves) + count(lib.instance_leaves) if lib.pre_plan

checked := count(lib.changes) if lib.post_plan
