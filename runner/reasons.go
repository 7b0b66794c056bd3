package runner

import (
	"fmt"
	"slices"
	"strings"
)

// Reason is an UPPER_SNAKE identifier from Nova's one published vocabulary.
// Every halt, block and warning carries one, so that automation can branch on
// it without parsing messages.
type Reason string

// Kind says whether a reason describes a verdict about the change (the input
// was evaluated and found wanting) or a failure to evaluate at all. The two map
// to different exit codes so that callers never have to parse stderr.
type Kind string

const (
	KindVerdict Kind = "verdict"
	KindError   Kind = "error"
	// KindWarning reasons are reported and never change a verdict or an
	// exit code.
	KindWarning Kind = "warning"
)

// ReasonInfo documents one reason code; docs/reason-codes.md is generated from
// the table below.
type ReasonInfo struct {
	Code    Reason
	Area    string
	Kind    Kind
	Meaning string
}

// Contract loading and schema.
const (
	ContractNotFound           Reason = "CONTRACT_NOT_FOUND"
	ContractUnreadable         Reason = "CONTRACT_UNREADABLE"
	ContractTooLarge           Reason = "CONTRACT_TOO_LARGE"
	ContractEncodingInvalid    Reason = "CONTRACT_ENCODING_INVALID"
	ContractEmpty              Reason = "CONTRACT_EMPTY"
	ContractYAMLInvalid        Reason = "CONTRACT_YAML_INVALID"
	ContractYAMLMultipleDocs   Reason = "CONTRACT_YAML_MULTIPLE_DOCUMENTS"
	ContractYAMLDuplicateKey   Reason = "CONTRACT_YAML_DUPLICATE_KEY"
	ContractYAMLAliasLimit     Reason = "CONTRACT_YAML_ALIAS_LIMIT"
	ContractYAMLUnsupportedTag Reason = "CONTRACT_YAML_UNSUPPORTED_TAG"
	ContractAPIVersion         Reason = "CONTRACT_API_VERSION_UNSUPPORTED"
	ContractUnknownField       Reason = "CONTRACT_UNKNOWN_FIELD"
	ContractFieldMissing       Reason = "CONTRACT_FIELD_MISSING"
	ContractFieldType          Reason = "CONTRACT_FIELD_TYPE"
	ContractFieldValue         Reason = "CONTRACT_FIELD_VALUE"
	ContractFieldFormat        Reason = "CONTRACT_FIELD_FORMAT"
	ContractEnvFieldMissing    Reason = "CONTRACT_ENV_FIELD_MISSING"
	ContractAgenticField       Reason = "CONTRACT_AGENTIC_FIELD_WITHOUT_PROFILE"
	ContractEnvOverrideLowers  Reason = "CONTRACT_ENV_OVERRIDE_LOWERS_GUARD"
	ContractSchemaViolation    Reason = "CONTRACT_SCHEMA_VIOLATION"
)

// Many contracts in one repository: finding them, and choosing those a
// change touches.
const (
	ContractIDDuplicate     Reason = "CONTRACT_ID_DUPLICATE"
	ContractDeleted         Reason = "CONTRACT_DELETED"
	ContractDiscoveryFailed Reason = "CONTRACT_DISCOVERY_FAILED"
	ChangeRangeInvalid      Reason = "CHANGE_RANGE_INVALID"
	ShardInvalid            Reason = "SHARD_INVALID"
	FanoutResultsInvalid    Reason = "FANOUT_RESULTS_INVALID"
	FanoutResultsUnwritten  Reason = "FANOUT_RESULTS_UNWRITTEN"
	FanoutResultMissing     Reason = "FANOUT_RESULT_MISSING"
)

// Registry loading: a broken registry is the platform's fault, not the
// consumer's, so these are errors rather than verdicts.
const (
	RegistryInvalid         Reason = "REGISTRY_INVALID"
	RegistryModuleMismatch  Reason = "REGISTRY_MODULE_MISMATCH"
	RegistryVersionInvalid  Reason = "REGISTRY_VERSION_INVALID"
	RegistryDuplicate       Reason = "REGISTRY_DUPLICATE"
	RegistryTerraformBroken Reason = "REGISTRY_TERRAFORM_INVALID"
)

// Resolution of a contract to its target stack.
const (
	StackUnknown          Reason = "STACK_UNKNOWN"
	ModuleUnknown         Reason = "MODULE_UNKNOWN"
	ModuleVersionMismatch Reason = "MODULE_VERSION_MISMATCH"
	StackDepthExceeded    Reason = "STACK_DEPTH_EXCEEDED"
	StackMultipleParents  Reason = "STACK_MULTIPLE_PARENTS"
	StackCycle            Reason = "STACK_CYCLE"
	WireTypeMismatch      Reason = "WIRE_TYPE_MISMATCH"
	WireEndpointUnknown   Reason = "WIRE_ENDPOINT_UNKNOWN"
	WireInputConflict     Reason = "WIRE_INPUT_CONFLICT"
	InputUnknown          Reason = "INPUT_UNKNOWN"
	InputRequiredMissing  Reason = "INPUT_REQUIRED_MISSING"
	InputTypeMismatch     Reason = "INPUT_TYPE_MISMATCH"
	InputReferenceUnknown Reason = "INPUT_REFERENCE_UNKNOWN"
	InstanceNameInvalid   Reason = "INSTANCE_NAME_INVALID"
	StackInstanceUnknown  Reason = "STACK_INSTANCE_UNKNOWN"
	InputValueTooDeep     Reason = "INPUT_VALUE_TOO_DEEP"
)

// Terraform, plan bundles and apply.
const (
	TerraformNotFound        Reason = "TERRAFORM_NOT_FOUND"
	TerraformInitFailed      Reason = "TERRAFORM_INIT_FAILED"
	TerraformPlanFailed      Reason = "TERRAFORM_PLAN_FAILED"
	TerraformShowFailed      Reason = "TERRAFORM_SHOW_FAILED"
	TerraformApplyFailed     Reason = "TERRAFORM_APPLY_FAILED"
	TerraformInterrupted     Reason = "TERRAFORM_INTERRUPTED"
	StateLocked              Reason = "STATE_LOCKED"
	PlanStale                Reason = "PLAN_STALE"
	RenderFailed             Reason = "RENDER_FAILED"
	BackendConfigInvalid     Reason = "BACKEND_CONFIG_INVALID"
	PlanBundleInvalid        Reason = "PLAN_BUNDLE_INVALID"
	PlanBundleMismatch       Reason = "PLAN_BUNDLE_MISMATCH"
	PlanDigestMismatch       Reason = "PLAN_DIGEST_MISMATCH"
	PlanChangedSinceApproval Reason = "PLAN_CHANGED_SINCE_APPROVAL"
	PlanNotCleared           Reason = "PLAN_NOT_CLEARED"
	StateLockFailed          Reason = "STATE_LOCK_FAILED"
	TerraformTimeout         Reason = "TERRAFORM_TIMEOUT"
	PlanTooLarge             Reason = "PLAN_TOO_LARGE"
	DriftDetected            Reason = "DRIFT_DETECTED"
)

// Engines: which binary plans and applies, and what it must be.
const (
	EngineVersionUnsatisfied     Reason = "ENGINE_VERSION_UNSATISFIED"
	EngineChangedSincePlan       Reason = "ENGINE_CHANGED_SINCE_PLAN"
	StateEncryptionUnsupported   Reason = "STATE_ENCRYPTION_UNSUPPORTED"
	StateEncryptionNotConfigured Reason = "STATE_ENCRYPTION_NOT_CONFIGURED"
	StateEncryptionKeyMissing    Reason = "STATE_ENCRYPTION_KEY_MISSING"
)

// Confidence signal and its inputs.
const (
	ConfidenceInputMissing   Reason = "CONFIDENCE_INPUT_MISSING"
	ConfidenceBelowThreshold Reason = "CONFIDENCE_BELOW_THRESHOLD"
	PolicyCriticalFail       Reason = "POLICY_CRITICAL_FAIL"
	SchemaIncomplete         Reason = "SCHEMA_INCOMPLETE"
	PolicyPenalized          Reason = "POLICY_PENALIZED"
	PolicyEngineFailed       Reason = "POLICY_ENGINE_FAILED"
	NFRUnmet                 Reason = "NFR_UNMET"
	NFRUndeclared            Reason = "NFR_UNDECLARED"
	TestsNotProvided         Reason = "TESTS_NOT_PROVIDED"
	TestsReportMissing       Reason = "TESTS_REPORT_MISSING"
	TestsReportInvalid       Reason = "TESTS_REPORT_INVALID"
	TestsFailing             Reason = "TESTS_FAILING"
	CostEstimateSkipped      Reason = "COST_ESTIMATE_SKIPPED"
	CostNoBudget             Reason = "COST_NO_BUDGET"
	CostOverBudget           Reason = "COST_OVER_BUDGET"
	ProvenanceUnsigned       Reason = "PROVENANCE_COMMIT_UNSIGNED"
	ProvenanceUnverified     Reason = "PROVENANCE_COMMIT_UNVERIFIED"
	ProvenanceUnknown        Reason = "PROVENANCE_COMMIT_UNKNOWN"
	ProvenanceUnpinned       Reason = "PROVENANCE_MODULE_UNPINNED"
	ProvenanceAgent          Reason = "PROVENANCE_AGENT_CONFIDENCE"
	ConfidenceLoweredByPlan  Reason = "CONFIDENCE_LOWERED_POST_PLAN"
)

// Gate and run.
const (
	ApprovalRequired            Reason = "APPROVAL_REQUIRED"
	ApprovalRejected            Reason = "APPROVAL_REJECTED"
	ApprovalFrozen              Reason = "APPROVAL_FROZEN"
	ApprovalClaimInvalid        Reason = "APPROVAL_CLAIM_INVALID"
	ApproverNotEligible         Reason = "APPROVER_NOT_ELIGIBLE"
	ApproverKeyNotRegistered    Reason = "APPROVER_KEY_NOT_REGISTERED"
	ChangeAuthorUnknown         Reason = "CHANGE_AUTHOR_UNKNOWN"
	PromotionOrderViolation     Reason = "PROMOTION_ORDER_VIOLATION"
	StateHeldByPR               Reason = "STATE_HELD_BY_PR"
	ApproverLeftGroup           Reason = "APPROVER_LEFT_GROUP"
	ApproverTeamUnreadable      Reason = "APPROVER_TEAM_UNREADABLE"
	SeparationOfDutiesViolation Reason = "SEPARATION_OF_DUTIES_VIOLATION"
	// Destroys (runner/destroy.go).
	DestroyOrderViolation     Reason = "DESTROY_ORDER_VIOLATION"
	DestroyNeedsMoreApprovals Reason = "DESTROY_NEEDS_MORE_APPROVALS"
	DestroyNothingApplied     Reason = "DESTROY_NOTHING_APPLIED"
	DestroyIncomplete         Reason = "DESTROY_INCOMPLETE"
	ApproversInvalid          Reason = "APPROVERS_INVALID"
	ForgeAPIFailed            Reason = "FORGE_API_FAILED"
	RunCancelled              Reason = "RUN_CANCELLED"
	EventWriteFailed          Reason = "EVENT_WRITE_FAILED"
	EventTooLarge             Reason = "EVENT_TOO_LARGE"
	ConfigInvalid             Reason = "CONFIG_INVALID"
	CommitMismatch            Reason = "COMMIT_MISMATCH"
	WorkflowActionUnpinned    Reason = "WORKFLOW_ACTION_UNPINNED"
	WorkflowSecretsExposed    Reason = "WORKFLOW_SECRETS_EXPOSED"
	InternalError             Reason = "INTERNAL_ERROR"
	// Files read from the consumer's checkout or a plan bundle.
	PathOutsideCheckout Reason = "PATH_OUTSIDE_CHECKOUT"
	FileNotRegular      Reason = "FILE_NOT_REGULAR"
	FileTooLarge        Reason = "FILE_TOO_LARGE"
)

// Evidence repo: signing, mirroring and verifying the audit trail, and the
// indeterminate applies it remembers.
const (
	EvidencePushFailed             Reason = "EVIDENCE_PUSH_FAILED"
	EvidenceBranchUnprotected      Reason = "EVIDENCE_BRANCH_UNPROTECTED"
	EvidenceRepoUnavailable        Reason = "EVIDENCE_REPO_UNAVAILABLE"
	EvidenceKeyInvalid             Reason = "EVIDENCE_KEY_INVALID"
	EvidenceChainBroken            Reason = "EVIDENCE_CHAIN_BROKEN"
	EvidenceSignatureInvalid       Reason = "EVIDENCE_SIGNATURE_INVALID"
	EvidenceCommitUnsigned         Reason = "EVIDENCE_COMMIT_UNSIGNED"
	EvidenceCommitKeyUnknown       Reason = "EVIDENCE_COMMIT_KEY_UNKNOWN"
	EvidenceCommitSignatureInvalid Reason = "EVIDENCE_COMMIT_SIGNATURE_INVALID"
	EvidenceCommitInvalid          Reason = "EVIDENCE_COMMIT_INVALID"
	EvidenceLayoutInvalid          Reason = "EVIDENCE_LAYOUT_INVALID"
	EvidenceEventDuplicate         Reason = "EVIDENCE_EVENT_DUPLICATE"
	EvidenceHistoryRewritten       Reason = "EVIDENCE_HISTORY_REWRITTEN"
	ApplyIndeterminate             Reason = "APPLY_INDETERMINATE"
	// Keyless signing (runner/evidence/keyless) and signers.yml.
	KeylessTokenMissing       Reason = "KEYLESS_TOKEN_MISSING"
	KeylessCertificateRefused Reason = "KEYLESS_CERTIFICATE_REFUSED"
	KeylessCertificateExpired Reason = "KEYLESS_CERTIFICATE_EXPIRED"
	SignerIdentityUntrusted   Reason = "SIGNER_IDENTITY_UNTRUSTED"
	SignersConfigInvalid      Reason = "SIGNERS_CONFIG_INVALID"
	// The optional transparency log (Rekor).
	RekorUploadFailed Reason = "REKOR_UPLOAD_FAILED"
	RekorEntryInvalid Reason = "REKOR_ENTRY_INVALID"
)

// Policy and NFR evaluation. Most of these are carried by PCRs (in
// evidence.reason, and as the ruleId of records about an engine rather than a
// rule) and do not stop the run; a critical failure stops it with
// POLICY_CRITICAL_FAIL (declared with the confidence codes).
const (
	PolicyEngineError       Reason = "POLICY_ENGINE_ERROR"
	PolicyResultInvalid     Reason = "POLICY_RESULT_INVALID"
	PolicyConfigInvalid     Reason = "POLICY_CONFIG_INVALID"
	PolicyCompileFailed     Reason = "POLICY_COMPILE_FAILED"
	PolicyLimitExceeded     Reason = "POLICY_LIMIT_EXCEEDED"
	PolicyNamespaceReserved Reason = "POLICY_NAMESPACE_RESERVED"
	CheckovNotConfigured    Reason = "CHECKOV_NOT_CONFIGURED"
	KyvernoNotConfigured    Reason = "KJ_ENGINE_NOT_CONFIGURED"
	PolicyEngineNoChecks    Reason = "POLICY_ENGINE_NO_CHECKS"
	InfracostNotConfigured  Reason = "INFRACOST_NOT_CONFIGURED"
	InfracostFailed         Reason = "INFRACOST_FAILED"
	NFRNotSatisfied         Reason = "NFR_NOT_SATISFIED"
	NFRNotSatisfiable       Reason = "NFR_NOT_SATISFIABLE"
	NFRBudgetExceeded       Reason = "NFR_BUDGET_EXCEEDED"
)

// Break-glass: the emergency path around the approvals (breakglass.go).
const (
	BreakGlassExpired           Reason = "BREAKGLASS_EXPIRED"
	BreakGlassRevoked           Reason = "BREAKGLASS_REVOKED"
	BreakGlassSelfApproval      Reason = "BREAKGLASS_SELF_APPROVAL"
	BreakGlassNotInGroup        Reason = "BREAKGLASS_NOT_IN_GROUP"
	BreakGlassDuplicateApproval Reason = "BREAKGLASS_DUPLICATE_APPROVAL"
	BreakGlassAlreadyGranted    Reason = "BREAKGLASS_ALREADY_GRANTED"
	BreakGlassCriticalFinding   Reason = "BREAKGLASS_CRITICAL_FINDING"
	BreakGlassDestroy           Reason = "BREAKGLASS_DESTROY"
	BreakGlassCommentEdited     Reason = "BREAKGLASS_COMMENT_EDITED"
)

// Rollback: returning an environment to a change it applied before.
const (
	RollbackTargetUnknown    Reason = "ROLLBACK_TARGET_UNKNOWN"
	RollbackTargetAmbiguous  Reason = "ROLLBACK_TARGET_AMBIGUOUS"
	RollbackTargetNotApplied Reason = "ROLLBACK_TARGET_NOT_APPLIED"
	RollbackTargetChanged    Reason = "ROLLBACK_TARGET_CHANGED"
	RollbackSourceMissing    Reason = "ROLLBACK_SOURCE_MISSING"

	// Apply after merge (merge.go).
	MergePlanStale    Reason = "MERGE_PLAN_STALE"
	MergeSuperseded   Reason = "MERGE_SUPERSEDED"
	MergeOrderUnknown Reason = "MERGE_ORDER_UNKNOWN"
)

var reasonTable = []ReasonInfo{
	{ContractNotFound, "contract", KindError, "No contract file exists at the given path (default `.nova/contract.yml`)."},
	{ContractUnreadable, "contract", KindError, "The contract file exists but cannot be read (permissions, a directory, an I/O error)."},
	{ContractTooLarge, "contract", KindVerdict, "The contract file is larger than 1 MiB; contracts declare intent and are never that big."},
	{ContractEncodingInvalid, "contract", KindVerdict, "The contract file is not valid UTF-8 (or contains a NUL byte)."},
	{ContractEmpty, "contract", KindVerdict, "The contract file holds no YAML document."},
	{ContractYAMLInvalid, "contract", KindVerdict, "The contract is not well-formed YAML; the finding gives the line."},
	{ContractYAMLMultipleDocs, "contract", KindVerdict, "The contract file holds more than one YAML document (`---`)."},
	{ContractYAMLDuplicateKey, "contract", KindVerdict, "A mapping in the contract repeats a key."},
	{ContractYAMLAliasLimit, "contract", KindVerdict, "YAML anchors and aliases expand beyond the limit (an alias bomb)."},
	{ContractYAMLUnsupportedTag, "contract", KindVerdict, "A YAML node carries an explicit tag other than the core schema's str, int, float, bool, null, seq and map."},
	{ContractAPIVersion, "contract", KindVerdict, "`apiVersion` is not `nova/v1`."},
	{ContractUnknownField, "contract", KindVerdict, "The contract holds a field the schema does not define (typos are errors, not ignored)."},
	{ContractFieldMissing, "contract", KindVerdict, "A field required in every environment is missing."},
	{ContractFieldType, "contract", KindVerdict, "A field has the wrong JSON type (a string where a number is expected, …)."},
	{ContractFieldValue, "contract", KindVerdict, "A field's value is outside its allowed set or range."},
	{ContractFieldFormat, "contract", KindVerdict, "A field does not match its format (UUID, URI, name pattern)."},
	{ContractEnvFieldMissing, "contract", KindVerdict, "A field mandatory for the contract's environment is missing (see docs/contract.md)."},
	{ContractAgenticField, "contract", KindVerdict, "An agentic field is set without `profile: agentic`."},
	{ContractEnvOverrideLowers, "contract", KindVerdict, "`--env` names a less guarded environment than the contract's own (a prod contract run as dev would skip its approval and reach its state)."},
	{ContractSchemaViolation, "contract", KindVerdict, "The contract violates a schema rule not covered by a more specific code."},

	{ContractIDDuplicate, "monorepo", KindVerdict, "Two contract files under the root declare the same `id` (both files are named); they would share one state and one evidence chain, so nothing runs until one is changed."},
	{ContractDeleted, "monorepo", KindVerdict, "A contract present at the base is gone at the head (no contract declares its `id` any more). A warning, reported in the summary and the pull request: it does not change the exit code (deleting a contract is a legitimate change). `nova plan|run --changed` plans its destroy through the gate, from the trusted base's copy of the contract (docs/destroy.md); nothing else destroys anything."},
	{ShardInvalid, "monorepo", KindError, "The `--shard` list a job of a sharded fan-out was given (the matrix entry's `shard`) is not one `nova matrix` writes: not a JSON list, empty, a path that is not a contract file inside `--dir`, a path listed twice, a destroy without the contract's id, or an operation other than `destroy`. The job runs nothing."},
	{FanoutResultsInvalid, "monorepo", KindError, "A results file a job of a sharded fan-out uploaded for `nova summary --from` is not one `nova run --results` writes: not JSON of the expected shape (unknown fields refused), a version other than 1, too large (over 4 MiB a file, 64 MiB in all, 2 048 files, 50 000 results), or a result with an invalid contract id, environment, verdict, reason code or digest. No summary is posted; the shards' commit statuses and check runs stand."},
	{FanoutResultsUnwritten, "monorepo", KindError, "A job of a fan-out reported in one summary (`--results FILE`) ran its contracts but could not write their results file: the summary job would have no row for them. The commit statuses and check runs stand; the job ends with exit 2 whatever its contracts' verdicts, so the run shows it."},
	{FanoutResultMissing, "monorepo", KindError, "`nova summary --selection` was given the fan-out's selection, and a contract in it has no result in any results file: its shard job failed before writing one, was cancelled, or did not run. The summary lists it as a row with no result, and `nova summary` ends with exit 2."},
	{ContractDiscoveryFailed, "monorepo", KindError, "The directory tree under the root could not be walked for contracts (a directory that cannot be read)."},
	{ChangeRangeInvalid, "monorepo", KindError, "`--changed` could not diff base and head: no base given (`--base`, or a pull request event), a commit that is not in the repository (a shallow clone: fetch with depth 0), or a root outside a git repository."},

	{RegistryInvalid, "registry", KindError, "A registry entry (module.yaml or stack.yaml) cannot be parsed or is incomplete."},
	{RegistryModuleMismatch, "registry", KindError, "A module's module.yaml disagrees with its terraform/ variables or outputs."},
	{RegistryVersionInvalid, "registry", KindError, "A registry version is not a semantic version (MAJOR.MINOR.PATCH)."},
	{RegistryDuplicate, "registry", KindError, "Two registry entries share a name."},
	{RegistryTerraformBroken, "registry", KindError, "A module's terraform/ directory cannot be read as Terraform reads it: a file that does not parse, a variable or output declared twice or overridden without a base declaration, or a Stacks file."},

	{StackUnknown, "resolve", KindVerdict, "The contract's `stack` names no L2 stack or L1 module in the registry."},
	{ModuleUnknown, "resolve", KindVerdict, "A stack instance refers to an L1 module the registry does not hold."},
	{ModuleVersionMismatch, "resolve", KindVerdict, "A stack pins a module version the registry does not hold."},
	{StackDepthExceeded, "resolve", KindVerdict, "The stack's instance tree is deeper than 5 levels."},
	{StackMultipleParents, "resolve", KindVerdict, "A stack instance is the child of more than one parent."},
	{StackCycle, "resolve", KindVerdict, "The stack's children or wires form a cycle."},
	{WireTypeMismatch, "resolve", KindVerdict, "A wire connects an output to an input of a different type."},
	{WireEndpointUnknown, "resolve", KindVerdict, "A wire names an instance, output or input that does not exist."},
	{WireInputConflict, "resolve", KindVerdict, "An input is both wired and given a value, or wired twice."},
	{InputUnknown, "resolve", KindVerdict, "The contract sets an input the stack does not declare."},
	{InputRequiredMissing, "resolve", KindVerdict, "A required input (no default) has no value."},
	{InputTypeMismatch, "resolve", KindVerdict, "An input's value does not have the declared type."},
	{InputReferenceUnknown, "resolve", KindVerdict, "A stack binding refers to an input or Nova value that does not exist."},
	{InstanceNameInvalid, "resolve", KindVerdict, "A stack instance name is not a valid Terraform identifier, or is used twice."},
	{StackInstanceUnknown, "resolve", KindVerdict, "A stack lists a child instance it does not declare."},
	{InputValueTooDeep, "resolve", KindVerdict, "An input value nests deeper than 32 levels."},

	{TerraformNotFound, "plan", KindError, "No binary of the contract's engine: terraform on PATH (or at --terraform), or tofu on PATH (or at --tofu) for `engine: opentofu`."},
	{TerraformInitFailed, "plan", KindError, "`terraform init` failed; the finding carries the tail of its stderr."},
	{TerraformPlanFailed, "plan", KindError, "`terraform plan` failed."},
	{TerraformShowFailed, "plan", KindError, "`terraform show -json` failed or its JSON could not be read."},
	{TerraformApplyFailed, "apply", KindError, "`terraform apply` of the saved plan failed."},
	{TerraformInterrupted, "plan", KindError, "Terraform was interrupted (cancellation); it was sent SIGINT so it could release its state lock."},
	{StateLocked, "plan", KindError, "Another run holds the lock of this contract and environment (Nova's run lock, or Terraform's state lock) and did not release it within --lock-timeout; the message names the holder: run id, pid and host from Nova's lock, else Terraform's lock info."},
	{PlanStale, "apply", KindError, "The saved plan no longer matches the state (something was applied since it was made); plan again."},
	{RenderFailed, "plan", KindError, "The root module could not be rendered from the target stack."},
	{BackendConfigInvalid, "plan", KindError, "A backend config entry is not `key=value` or the backend type is not a name."},
	{PlanBundleInvalid, "apply", KindError, "The plan bundle is missing or unreadable."},
	{PlanBundleMismatch, "apply", KindVerdict, "The plan bundle was made for another contract, environment, contract content or commit, or does not carry the plan digest `--digest` expects."},
	{DestroyIncomplete, "apply", KindError, "Terraform reported the destroy complete, but the state still holds resources; the state is kept and the environment still counts as running the contract. Inspect the state, then destroy again."},
	{PlanDigestMismatch, "apply", KindVerdict, "The saved plan no longer hashes to the digest recorded when it was planned (tampering or corruption)."},
	{PlanChangedSinceApproval, "apply", KindVerdict, "A re-plan differs from the plan that was approved."},
	{StateLockFailed, "plan", KindError, "The run lock of this contract and environment could not be taken or checked: the lock file under --state-dir cannot be opened, or the pg backend's database cannot be reached for its advisory lock."},
	{TerraformTimeout, "plan", KindError, "A terraform command ran longer than --terraform-timeout and was interrupted (SIGINT, so it could release its state lock). An apply that timed out is recorded as `APPLY_INDETERMINATE`, never as a failure."},
	{PlanTooLarge, "plan", KindError, "`terraform show -json` of the saved plan is larger than Nova accepts (256 MiB); the plan is refused rather than carried into the bundle and the evidence. Split the contract."},
	{PlanNotCleared, "apply", KindVerdict, "The evidence holds no passing plan-level policy and confidence for this plan digest: the plan failed (or never finished) its evaluation and cannot be applied."},

	{EngineVersionUnsatisfied, "engine", KindError, "The engine's binary does not satisfy the contract's `engineVersion` constraint (or is older than Nova runs: terraform 0.15.4, OpenTofu 1.6.0, and 1.7.0 for state encryption)."},
	{EngineChangedSincePlan, "apply", KindVerdict, "The plan bundle was planned by another engine or engine version than the one this apply would run (the contract's `engine`, `--engine`, or the binary changed between plan and apply); approving a plan of one engine never authorises an apply by another. Plan again."},
	{StateEncryptionUnsupported, "engine", KindVerdict, "State encryption is asked for (`nfr.stateEncryption: required` or `backend.encryption`) but the contract's engine is terraform, which cannot encrypt state; use `engine: opentofu`."},
	{StateEncryptionNotConfigured, "engine", KindVerdict, "`nfr.stateEncryption: required` with OpenTofu, but the contract's backend configures no encryption (`backend.encryption`)."},
	{StateEncryptionKeyMissing, "engine", KindError, "The contract's state is encrypted and `$NOVA_STATE_PASSPHRASE` holds no passphrase of at least 16 characters, so OpenTofu could neither read nor write it."},

	{ConfidenceInputMissing, "confidence", KindVerdict, "A confidence input could not be computed (its stage did not run or errored, or a required test suite is missing or unreadable); the run halts rather than score without it."},
	{ConfidenceBelowThreshold, "confidence", KindVerdict, "The confidence score is below the environment's frozen threshold (dev 0.50, qa 0.75, prod 0.90, dr 0.95)."},
	{PolicyCriticalFail, "confidence", KindVerdict, "A policy check of critical severity failed; the run is blocked whatever the score."},
	{SchemaIncomplete, "confidence", KindVerdict, "schema input: recommended contract fields are missing."},
	{PolicyPenalized, "confidence", KindVerdict, "policy input: failing policy checks lowered the score (high 0.2, medium 0.05, low 0.01 each)."},
	{PolicyEngineFailed, "confidence", KindVerdict, "policy input: a policy engine could not evaluate; counted like a high finding."},
	{NFRUnmet, "confidence", KindVerdict, "nfr input: declared non-functional requirements are not satisfied by the stack."},
	{NFRUndeclared, "confidence", KindVerdict, "nfr input: no NFR was declared (neutral in dev, 0 elsewhere)."},
	{TestsNotProvided, "confidence", KindVerdict, "tests input: the contract points at no test report (dev only; scored 0.5)."},
	{TestsReportMissing, "confidence", KindVerdict, "tests input: a test report the contract points at does not exist."},
	{TestsReportInvalid, "confidence", KindVerdict, "tests input: a test report is not JUnit XML, is empty, or lies outside the checkout."},
	{TestsFailing, "confidence", KindVerdict, "tests input: some tests in the reports failed."},
	{CostEstimateSkipped, "confidence", KindVerdict, "cost input: no cost estimate could be made; scored 0.5."},
	{CostNoBudget, "confidence", KindVerdict, "cost input: the contract declares no monthlyCostCeiling to compare with; scored 0.5."},
	{CostOverBudget, "confidence", KindVerdict, "cost input: the estimate exceeds the budget (linear to 0 at twice the budget)."},
	{ProvenanceUnsigned, "confidence", KindVerdict, "provenance input: the commit is not signed."},
	{ProvenanceUnverified, "confidence", KindVerdict, "provenance input: the commit is signed but no trusted key verified it."},
	{ProvenanceUnknown, "confidence", KindVerdict, "provenance input: the commit could not be read (no git checkout)."},
	{ProvenanceUnpinned, "confidence", KindVerdict, "provenance input: a module is used without a pinned version."},
	{ProvenanceAgent, "confidence", KindVerdict, "provenance input: an agent-written contract's own confidenceAtSubmission is blended in."},
	{ConfidenceLoweredByPlan, "confidence", KindVerdict, "Plan-level findings lowered the confidence score after the plan (it can never rise)."},

	{ApprovalRequired, "gate", KindVerdict, "The environment needs a human approval bound to this plan digest before apply."},
	{ApprovalRejected, "gate", KindVerdict, "An approver of the environment rejected this plan; the contract is held until a new plan is approved."},
	{ApprovalFrozen, "gate", KindVerdict, "The approval request has waited two business days; re-submit with `supersedes` naming the old request."},
	{ApprovalClaimInvalid, "gate", KindVerdict, "A signed approval claim does not verify, names another plan, or was already used (a replay)."},
	{ApproverNotEligible, "gate", KindVerdict, "A claimed approval was not imported: its author is not in the environment's approver group, wrote the change, or approved another plan or environment (recorded in `nova.approval.checked`)."},
	{ApproverKeyNotRegistered, "gate", KindVerdict, "On a forge, a local approval (`nova approve`) counts only when signed with the key registered for the approver under `keys:` in the trusted approver config; a key made on first use proves nothing about who typed `--as`."},
	{ChangeAuthorUnknown, "gate", KindVerdict, "A commit of the change has an author the forge links to no account, so nobody can be shown not to have written it; no approval is accepted until it is linked or replaced (rejections still count)."},
	{PromotionOrderViolation, "gate", KindVerdict, "The change (contract content, module digests, engine version) has not been applied in the environment before this one: qa follows dev, prod follows qa, dr follows prod."},
	{ApproverLeftGroup, "gate", KindVerdict, "The approval was recorded while its approver was in the environment's group, but they are no longer in it when the gate decides; it no longer counts."},
	{StateHeldByPR, "gate", KindVerdict, "Another open pull request holds the environment (dev): its change was applied there first, and it holds it until the forge says it was merged or closed, or an operator runs `nova unlock`. This pull request's run is refused before it plans; the message names the holder and its change."},
	{ApproverTeamUnreadable, "gate", KindError, "A team of the environment's approver group in `.nova/approvers.yml` cannot be read with Nova's forge token, so nobody can tell who is in it: Nova stops rather than ignore its members' approvals and rejections. GitHub shows organization teams only to a token that may read the organization's members (the workflow's `GITHUB_TOKEN` never can: use a GitHub App installation token with `members: read`, or a token with `read:org`); Gitea only to the team's members and the organization's owners, with a token of scope `read:organization`."},
	{SeparationOfDutiesViolation, "gate", KindVerdict, "The prod or dr approver also approved this contract in qa; someone else from the approver group must approve."},
	{DestroyOrderViolation, "gate", KindVerdict, "A destroy goes the promotion order backwards, dr → prod → qa → dev: an environment is destroyed only once every environment after it has been destroyed or never applied the contract (and none of them has an apply of unknown outcome)."},
	{DestroyNeedsMoreApprovals, "gate", KindVerdict, "A destroy needs more distinct approvers than it has: by default one in qa and two in prod and dr (`destroyApprovals` in `.nova/approvers.yml`). The same approver approving twice counts once; an approver refused for separation of duties does not count."},
	{DestroyNothingApplied, "gate", KindWarning, "A destroy was asked for in an environment where the evidence shows nothing of the contract running: it never applied there, or a destroy completed since. Nothing is planned; the run passes."},
	{ApproversInvalid, "gate", KindError, "`.nova/approvers.yml` in the trusted base is missing, unreadable or invalid (an unknown field, an undefined group, a malformed name)."},
	{ForgeAPIFailed, "gate", KindError, "The forge's API (GitHub, Gitea) could not be read or written after retries: unreachable, unauthorized, or rate-limited past the wait."},
	{RunCancelled, "run", KindError, "The run was cancelled (signal or timeout) before it finished."},
	{EventWriteFailed, "run", KindError, "An event could not be written durably; the run stops rather than act unrecorded."},
	{EventTooLarge, "run", KindError, "An event's data is larger than an event may be (4 MiB); it was refused rather than written, and the run stops."},
	{ConfigInvalid, "run", KindError, "A flag, environment variable or setting is invalid."},
	{PathOutsideCheckout, "run", KindError, "A path Nova was asked to read (a flag, a contract field, a link in the checkout or the bundle) resolves outside the checkout or bundle; nothing outside is read."},
	{FileNotRegular, "run", KindError, "A file Nova reads from the checkout or a bundle is a FIFO, a device or a directory, not a regular file."},
	{FileTooLarge, "run", KindError, "A file Nova reads from the checkout or a bundle is larger than its limit; it is refused without being read whole."},
	{CommitMismatch, "run", KindError, "The commit given (--commit, $NOVA_COMMIT, $GITHUB_SHA) is not the commit --dir has checked out, nor an ancestor of it the forge's event names; a plan is bound to the code it was made from."},
	{WorkflowActionUnpinned, "run", KindWarning, "A workflow job that deploys to prod or dr uses Nova's action or reusable workflow by tag, which can be moved to other code; `nova pin` replaces the tag with its commit. A warning of `nova validate`."},
	{WorkflowSecretsExposed, "run", KindWarning, "A workflow job reads Nova's secrets (NOVA_*) where a branch pusher can shape the run: a pull request's or branch's own copy of the workflow runs it, or (GitHub) the secrets are repository secrets every workflow receives. A warning of `nova validate`; docs/security.md says where the keys belong."},
	{InternalError, "run", KindError, "A bug in Nova; please report it with the run's events."},

	{EvidenceBranchUnprotected, "evidence", KindError, "On a forge, the evidence branch may be force-pushed (it is not protected, or its protection allows it) and this runner keeps no witness of the heads it pushed: rolling the branch back would erase a rejection or an open apply unseen, so Nova does not decide from it."},
	{EvidencePushFailed, "evidence", KindError, "An event could not be pushed to the evidence repo; for `nova.apply.authorized` the run stops before apply and the outbox keeps the events for the next run."},
	{EvidenceRepoUnavailable, "evidence", KindError, "The evidence repo cannot be opened, cloned or fetched (path, URL or credentials)."},
	{EvidenceKeyInvalid, "evidence", KindError, "A signing or verification key is missing, cannot be decrypted, or is not ECDSA P-256 / OpenPGP."},
	{EvidenceChainBroken, "evidence", KindVerdict, "A contract's chain has a gap, a wrong `seq` or a `prevEventHash` that does not match the previous event file."},
	{EvidenceSignatureInvalid, "evidence", KindVerdict, "An event's `.sig` is missing or does not verify with any allowed public key."},
	{EvidenceCommitUnsigned, "evidence", KindVerdict, "An evidence commit carries no signature."},
	{EvidenceCommitKeyUnknown, "evidence", KindVerdict, "An evidence commit is signed by a key that is not allowed."},
	{EvidenceCommitSignatureInvalid, "evidence", KindVerdict, "An evidence commit's OpenPGP signature does not match its content."},
	{EvidenceCommitInvalid, "evidence", KindVerdict, "An evidence commit does not add exactly the one event its message names (a merge, a modification, a deletion)."},
	{EvidenceLayoutInvalid, "evidence", KindVerdict, "A file lies outside `contracts/<shard>/<contractId>/<seq/100>xx/<seq>-<type>.json|.sig`, or an event file disagrees with its path."},
	{EvidenceEventDuplicate, "evidence", KindVerdict, "Two events in the evidence repo share a CloudEvents `id`."},
	{EvidenceHistoryRewritten, "evidence", KindVerdict, "A head this machine pushed is no longer in the evidence repo's history (a force-push dropped or rewrote commits)."},
	{KeylessTokenMissing, "evidence", KindError, "Keyless signing is on and the job has no OIDC token: on GitHub the job lacks `permissions: id-token: write`; elsewhere NOVA_OIDC_TOKEN / NOVA_OIDC_TOKEN_FILE is unset."},
	{KeylessCertificateRefused, "evidence", KindError, "Fulcio refused to certify the ephemeral key (the token's issuer is not one it trusts, the token expired or has the wrong audience) or could not be reached."},
	{KeylessCertificateExpired, "evidence", KindError, "The short-lived signing certificate was no longer (or not yet) valid when Nova was about to sign with it; nothing is signed outside a certificate's validity."},
	{SignerIdentityUntrusted, "evidence", KindVerdict, "A keyless signature's certificate does not chain to a trusted Fulcio root, or its identity (issuer, repository, workflow file and ref) is not one `.nova/signers.yml` on the default branch names: a pull request's edited workflow signs as another `job_workflow_ref` and does not count."},
	{SignersConfigInvalid, "evidence", KindError, "`.nova/signers.yml` is not on the trusted base (the default branch, read through the forge's API in a forge's job), does not parse, has an unknown field, or names an identity without issuer, repository or workflow; a forge's job names a signers file or default branch of its own; or keyless signatures are to be verified and no Fulcio root is configured."},
	{RekorUploadFailed, "evidence", KindError, "Keyless signing uploads to a transparency log (NOVA_REKOR_URL) and the log could not be reached, refused the entry, or answered with one that does not verify (its inclusion proof, checkpoint or signed entry timestamp, or the signature, certificate and digest it records): the event is not recorded."},
	{RekorEntryInvalid, "evidence", KindVerdict, "A keyless event's Rekor entry does not verify with the configured Rekor key (inclusion proof, signed checkpoint, signed entry timestamp), records another signature, certificate or digest, or was logged outside the certificate's validity; or a log entry is required (NOVA_REKOR_REQUIRED, verify's --require-tlog) and the event has none."},
	{ApplyIndeterminate, "evidence", KindVerdict, "An earlier apply of this contract was interrupted or unreadable; record `nova evidence resolve` before applying again."},

	{PolicyEngineError, "policy", KindError, "A policy engine could not evaluate (it crashed, exited abnormally or returned an error); recorded as an `error` PCR naming the engine, and the run continues."},
	{PolicyResultInvalid, "policy", KindError, "An engine returned a record that does not validate against `docs/pcr.schema.json`; it is replaced by an `error` PCR naming the engine."},
	{PolicyConfigInvalid, "policy", KindError, "`.nova/config.yml` or a policy flag is invalid (an unknown field, a wrong type, an unknown engine, a path outside the repository)."},
	{PolicyCompileFailed, "policy", KindError, "The consumer's policies (`.nova/policy/`) do not parse or compile; platform rules still run."},
	{PolicyLimitExceeded, "policy", KindVerdict, "A consumer policy went past its limits (the phase's evaluation deadline, a range longer than 100 000 numbers); it is an `error` record of critical severity, and blocks as the failure it might have been."},
	{PolicyNamespaceReserved, "policy", KindError, "A consumer policy declares a package under `nova`, which is reserved for platform rules; the consumer's policies are not evaluated."},
	{CheckovNotConfigured, "policy", KindError, "checkov is not installed (or not at the configured path); recorded as one `skipped` PCR."},
	{KyvernoNotConfigured, "policy", KindError, "kyverno-json is not installed, or no kyverno-json policies are configured; recorded as one `skipped` PCR."},
	{PolicyEngineNoChecks, "policy", KindError, "checkov or kyverno-json ran but reported no check at all (a summary only, or `[]`); recorded as one `skipped` PCR, so that no check running is never mistaken for a pass."},
	{InfracostNotConfigured, "policy", KindError, "infracost is not installed or `INFRACOST_API_KEY` is not set; the cost PCR is `skipped`."},
	{InfracostFailed, "policy", KindError, "infracost exited abnormally or printed something other than its JSON format; the cost PCR is an `error`."},
	{NFRNotSatisfied, "policy", KindVerdict, "A declared NFR is not met by the values the stack's modules get (the PCR names the instance and input)."},
	{NFRNotSatisfiable, "policy", KindVerdict, "No module of the stack declares a capability that could meet a declared NFR."},
	{NFRBudgetExceeded, "policy", KindVerdict, "The cost estimate exceeds the contract's `nfr.monthlyCostCeiling`."},

	{RollbackTargetUnknown, "rollback", KindError, "`nova rollback --to` names no change the contract's evidence knows (no `nova.change.identified` or plan of it); check the id with `nova evidence query --type nova.change.identified --output jsonl` (`data.result.id`)."},
	{RollbackTargetAmbiguous, "rollback", KindError, "The prefix given to `nova rollback --to` starts more than one change of the contract; give more of the id."},
	{RollbackTargetNotApplied, "rollback", KindVerdict, "The change `nova rollback --to` names was never applied in the environment: a rollback returns an environment only to a change its evidence shows it ran."},
	{RollbackTargetChanged, "rollback", KindVerdict, "The contract read back from the target's commit is not that change any more: the registry's stack or modules, or the engine version, changed since, so it would deploy something the environment never ran."},
	{RollbackSourceMissing, "rollback", KindError, "The target's contract cannot be read back: no plan of the change names its commit, or the commit is not in the checkout (a shallow clone: fetch the full history, `fetch-depth: 0`)."},

	{MergePlanStale, "merge", KindVerdict, "On the merged commit (`nova run --merged`), the plan is not the one approved on the pull request: the merge changed the contract, the stack, a module or the engine version (the finding names which), or the same change now plans differently (what runs moved). The new plan waits for a new approval; only the exact approved plan is applied. In a merge queue (`nova run --merge-queue`, on `merge_group`), the queue's commit is not the change approved on the pull request, so it would wait after merging: the check fails and the queue drops the entry before it merges."},
	{MergeSuperseded, "merge", KindVerdict, "`nova run --merged` on a merged commit that is an ancestor of one the environment already applied after a merge (a run of an older merge, started or re-run late): applying it would go back. Nothing is planned or applied; to return the environment to an earlier change, use `nova rollback`."},
	{MergeOrderUnknown, "merge", KindError, "`nova run --merged` cannot tell whether the merged commit comes before or after the one the environment applied after its last merge: that commit is not in the checkout (a shallow clone: fetch the default branch's history, `fetch-depth: 0`). Nothing is planned or applied."},

	{DriftDetected, "drift", KindVerdict, "`nova drift` found resources that no longer match what was applied: changed outside Terraform, or no longer what the applied configuration describes (the event names addresses and attribute names, never values)."},

	{BreakGlassExpired, "break-glass", KindVerdict, "The break-glass grant that would have authorized the plan (the one its confidence was accepted under, or one that held when it was planned) has expired, or a request waited longer than a grant lasts before its second approval. A plan whose score only the grant accepted is refused; otherwise the plan waits for the environment's normal approvals."},
	{BreakGlassRevoked, "break-glass", KindVerdict, "The break-glass grant (or the request) was revoked with `nova break-glass revoke`; it authorizes nothing and takes no more approvals."},
	{BreakGlassSelfApproval, "break-glass", KindVerdict, "The requester of a break-glass request tried to approve it; two other members of the `breakglass` group must."},
	{BreakGlassNotInGroup, "break-glass", KindVerdict, "The person approving, revoking or reviewing break-glass is not in the `breakglass` group of the trusted `.nova/approvers.yml` (or, at the gate, an approver of the grant has left it since)."},
	{BreakGlassDuplicateApproval, "break-glass", KindVerdict, "The same person approved a break-glass request twice; a grant needs two distinct approvers."},
	{BreakGlassAlreadyGranted, "break-glass", KindVerdict, "The break-glass request was granted already; it takes no more approvals."},
	{BreakGlassCriticalFinding, "break-glass", KindVerdict, "A break-glass grant never covers a plan with a failing (or unevaluated) critical policy check; the plan is refused."},
	{BreakGlassDestroy, "break-glass", KindVerdict, "A break-glass grant never covers a destroy (a plan that only removes resources); it needs the environment's normal approvals."},
	{BreakGlassCommentEdited, "break-glass", KindVerdict, "A `/nova break-glass` comment was edited after it was posted (or the event was its edit or deletion); anyone with write access may have written the text, so it never approves or revokes: post the command anew."},
}

// Reasons returns the vocabulary in documentation order.
func Reasons() []ReasonInfo { return slices.Clone(reasonTable) }

// Lookup returns the table entry for r.
func Lookup(r Reason) (ReasonInfo, bool) {
	for _, info := range reasonTable {
		if info.Code == r {
			return info, true
		}
	}
	return ReasonInfo{}, false
}

// ReasonCodesMarkdown renders docs/reason-codes.md. A test compares the file
// with this output so the published vocabulary can never drift from the code.
func ReasonCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("# Reason codes\n\n")
	b.WriteString("<!-- Generated from runner/reasons.go by `make docs`; do not edit by hand. -->\n\n")
	b.WriteString("Every halt, block and warning Nova reports carries one of these codes. ")
	b.WriteString("`verdict` codes mean the change was evaluated and found wanting (exit code 1, or 3 while awaiting approval); ")
	b.WriteString("`error` codes mean Nova could not evaluate at all (exit code 2).\n")
	area := ""
	for _, info := range reasonTable {
		if info.Area != area {
			area = info.Area
			fmt.Fprintf(&b, "\n## %s\n\n| code | kind | meaning |\n|---|---|---|\n", area)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", info.Code, info.Kind, info.Meaning)
	}
	return b.String()
}
