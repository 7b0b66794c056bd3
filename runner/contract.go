package runner

// APIVersion is the only contract apiVersion this build understands.
const APIVersion = "nova/v1"

// Environment is where a contract deploys. The set is closed: gate rules,
// mandatory fields and confidence thresholds are defined per environment.
type Environment string

const (
	Dev  Environment = "dev"
	QA   Environment = "qa"
	Prod Environment = "prod"
	DR   Environment = "dr"
)

// Environments lists every environment, least to most guarded.
var Environments = []Environment{Dev, QA, Prod, DR}

// Valid reports whether e is one of Environments.
func (e Environment) Valid() bool {
	for _, x := range Environments {
		if x == e {
			return true
		}
	}
	return false
}

// Guard ranks how guarded e is: dev 0 < qa 1 < prod 2 < dr 3.
func (e Environment) Guard() int {
	for i, x := range Environments {
		if x == e {
			return i
		}
	}
	return -1
}

// Autonomous reports whether a run in e may apply without a human approval.
func (e Environment) Autonomous() bool { return e == Dev }

// Previous is the environment a change must have been applied in before
// it may be applied in e ("" for dev).
func (e Environment) Previous() Environment {
	if i := e.Guard(); i > 0 {
		return Environments[i-1]
	}
	return ""
}

// Contract is the consumer's declared intent, as loaded from
// .nova/contract.yml after schema validation. Field names follow the YAML.
type Contract struct {
	APIVersion  string         `json:"apiVersion"`
	ID          string         `json:"id"`
	Stack       string         `json:"stack"`
	Environment Environment    `json:"environment"`
	Inputs      map[string]any `json:"inputs,omitempty"`
	NFR         *NFR           `json:"nfr,omitempty"`
	Validation  *Validation    `json:"validation,omitempty"`
	Runbook     string         `json:"runbook,omitempty"`
	Dashboard   string         `json:"dashboard,omitempty"`
	Oncall      string         `json:"oncall,omitempty"`
	DRDrillRef  string         `json:"drDrillRef,omitempty"`
	Supersedes  string         `json:"supersedes,omitempty"`
	Backend     *Backend       `json:"backend,omitempty"`
	Profile     string         `json:"profile,omitempty"`
	// Engine is the engine that plans and applies ("" is terraform; see
	// EngineName). EngineVersion, when set, is a version constraint its
	// binary must satisfy (">= 1.12").
	Engine        string `json:"engine,omitempty"`
	EngineVersion string `json:"engineVersion,omitempty"`

	// Agentic fields, accepted only with profile: agentic.
	NaturalLanguageIntent  string   `json:"naturalLanguageIntent,omitempty"`
	ConfidenceAtSubmission *float64 `json:"confidenceAtSubmission,omitempty"`
	AgentTrace             string   `json:"agentTrace,omitempty"`

	// Declared is the environment the contract names itself, before
	// --env: the first environment its changes may enter.
	Declared Environment `json:"-"`
}

// The engines a contract can name. Both run through the same adapter
// (runner/terraform), since OpenTofu's CLI is Terraform's.
const (
	EngineTerraform = "terraform"
	EngineOpenTofu  = "opentofu"
)

// Engines lists the engines a contract can name, the default first.
var Engines = []string{EngineTerraform, EngineOpenTofu}

// EngineName is the engine the contract runs with: its engine field, or
// terraform when it names none. The field itself stays as written, so a
// contract that names no engine digests as it did before engines could
// be named.
func (c *Contract) EngineName() string {
	if c.Engine == "" {
		return EngineTerraform
	}
	return c.Engine
}

// ProfileAgentic marks a contract written by an agent; it unlocks the agentic
// fields and feeds confidenceAtSubmission into the provenance input.
const ProfileAgentic = "agentic"

// NFR holds the non-functional requirements a contract declares. Pointers
// distinguish "not declared" from a zero value.
type NFR struct {
	Availability       *float64 `json:"availability,omitempty"`
	RPOMinutes         *int     `json:"rpoMinutes,omitempty"`
	RTOMinutes         *int     `json:"rtoMinutes,omitempty"`
	EncryptionAtRest   *bool    `json:"encryptionAtRest,omitempty"`
	Backups            *bool    `json:"backups,omitempty"`
	MultiAZ            *bool    `json:"multiAz,omitempty"`
	LatencyP99Ms       *int     `json:"latencyP99Ms,omitempty"`
	MonthlyCostCeiling *float64 `json:"monthlyCostCeiling,omitempty"`
	DataClassification string   `json:"dataClassification,omitempty"`
	// StateEncryption is "required" when the engine must encrypt the
	// state (and saved plans) it writes.
	StateEncryption string `json:"stateEncryption,omitempty"`
}

// StateEncryptionRequired is the one value of nfr.stateEncryption.
const StateEncryptionRequired = "required"

// Validation points at the JUnit XML reports that evidence the change.
type Validation struct {
	UnitTests        string `json:"unitTests,omitempty"`
	IntegrationTests string `json:"integrationTests,omitempty"`
	E2ESuite         string `json:"e2eSuite,omitempty"`
	LoadTest         string `json:"loadTest,omitempty"`
}

// Backend selects a Terraform backend other than Nova's default local state.
// Config entries become -backend-config arguments rather than HCL, so no
// contract string is ever spliced into the rendered backend block.
type Backend struct {
	Type   string            `json:"type"`
	Config map[string]string `json:"config,omitempty"`
	// Encryption, when set, has the engine encrypt the state it keeps in
	// this backend, and its saved plans (OpenTofu only).
	Encryption *StateEncryption `json:"encryption,omitempty"`
}

// StateEncryption is how the engine encrypts state. The key's secret is
// never in the contract: the operator passes it to Nova (for PBKDF2, a
// passphrase in $NOVA_STATE_PASSPHRASE).
type StateEncryption struct {
	// KeyProvider derives the key: "pbkdf2" (from a passphrase, offline).
	KeyProvider string `json:"keyProvider"`
}

// KeyProviderPBKDF2 derives the state key from a passphrase, with no
// service to reach.
const KeyProviderPBKDF2 = "pbkdf2"

// Encrypted reports whether the contract's backend encrypts its state.
func (c *Contract) Encrypted() bool { return c.Backend != nil && c.Backend.Encryption != nil }

// envRequired lists the fields each environment adds to the ones every
// contract needs. The lists accumulate: a prod contract also needs what qa
// needs, because whatever reached prod went through qa's bar first.
var envRequired = []struct {
	env    Environment
	fields []string
}{
	{Dev, nil},
	{QA, []string{"/validation/e2eSuite", "/validation/loadTest"}},
	{Prod, []string{"/runbook", "/dashboard", "/oncall"}},
	{DR, []string{"/drDrillRef"}},
}

// RequiredFields returns the fields (JSON pointers) a contract in env must
// set beyond apiVersion, id, stack and environment: the schema stage
// enforces them and the confidence stage scores completeness against them.
func RequiredFields(env Environment) []string {
	var out []string
	for _, r := range envRequired {
		out = append(out, r.fields...)
		if r.env == env {
			return out
		}
	}
	return nil
}
