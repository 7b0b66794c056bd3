package nova.meta_test

import data.nova.meta

test_blocks_on_a_critical_failure if {
	meta.blocks with input as {"pcrs": [
		{"ruleId": "nova.secrets.plaintext", "severity": "critical", "result": "fail", "engine": "rego", "resourceRef": "contract:/inputs/db_password"},
		{"ruleId": "nova.tags.required", "severity": "medium", "result": "fail", "engine": "rego"},
	]}
}

test_passes_a_critical_pass_and_lesser_failures if {
	not meta.blocks with input as {"pcrs": [
		{"ruleId": "nova.secrets.plaintext", "severity": "critical", "result": "pass", "engine": "rego"},
		{"ruleId": "checkov.CKV_AWS_20", "severity": "high", "result": "fail", "engine": "checkov"},
		{"ruleId": "CHECKOV_NOT_CONFIGURED", "severity": "info", "result": "skipped", "engine": "checkov"},
	]}
}

test_a_critical_rule_that_could_not_evaluate_blocks if {
	meta.blocks with input as {"pcrs": [{"ruleId": "nova.secrets.plaintext", "severity": "critical", "result": "error", "engine": "rego"}]}
}

test_an_engine_error_does_not_block if {
	# An engine that could not evaluate is penalised by the confidence
	# stage; blocking on it would let a flaky tool stop every run.
	not meta.blocks with input as {"pcrs": [{"ruleId": "POLICY_ENGINE_ERROR", "severity": "high", "result": "error", "engine": "checkov"}]}
}

test_lists_each_critical_failure if {
	got := meta.critical_failures with input as {"pcrs": [
		{"ruleId": "a", "severity": "critical", "result": "fail", "engine": "rego", "resourceRef": "x"},
		{"ruleId": "b", "severity": "critical", "result": "fail", "engine": "kyverno"},
	]}
	got == {{"ruleId": "a", "resourceRef": "x", "engine": "rego", "result": "fail"}, {"ruleId": "b", "resourceRef": "", "engine": "kyverno", "result": "fail"}}
}
