package nfr

import (
	"fmt"

	"github.com/nova-platform/nova/runner"
)

// StateEncryptionRuleID is the rule id of nfr.stateEncryption's record.
const StateEncryptionRuleID = "nfr.stateEncryption"

// stateEncryption judges nfr.stateEncryption. What encrypts state is the
// engine, configured from the contract's backend, not a module of the
// stack: so it is judged from the contract (with --engine applied), and
// the registry's capabilities have no say. It is critical: a run that
// went on would write the state the contract requires encrypted in
// plaintext, which no later approval can undo.
func stateEncryption(c *runner.Contract) runner.PCR {
	p := runner.PCR{Engine: runner.EngineNFR, RuleID: StateEncryptionRuleID, Severity: runner.Critical,
		ResourceRef: "contract:/nfr/stateEncryption", Result: runner.PCRFail}
	ev := map[string]any{"required": c.NFR.StateEncryption, "engine": c.EngineName()}
	var reason runner.Reason
	switch {
	case c.EngineName() != runner.EngineOpenTofu:
		reason, ev["status"] = runner.StateEncryptionUnsupported, NotSatisfiable
		p.Message = fmt.Sprintf("stateEncryption required: %s cannot encrypt state; use engine: opentofu with backend.encryption", c.EngineName())
	case !c.Encrypted():
		reason, ev["status"] = runner.StateEncryptionNotConfigured, NotSatisfied
		p.Message = "stateEncryption required: the backend configures no encryption; add backend.encryption (keyProvider: pbkdf2) and give the passphrase in $NOVA_STATE_PASSPHRASE"
	default:
		ev["status"], ev["keyProvider"] = Satisfied, c.Backend.Encryption.KeyProvider
		p.Result = runner.PCRPass
		p.Message = fmt.Sprintf("stateEncryption required is met: OpenTofu encrypts the state and saved plans (AES-GCM, key from %s, enforced)", c.Backend.Encryption.KeyProvider)
	}
	p.Evidence = runner.PCREvidence(reason, ev)
	return p
}
