package terraform

import (
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nova-platform/nova/runner"
)

// OpenTofu encrypts state in two halves that it merges, by block type and
// name, before it reads either: the encryption block Nova renders into the
// root module (a method that uses key provider pbkdf2.nova, enforced for
// state and plans; see templates/terraform), and the key provider's own
// block, which holds the passphrase, given to tofu in TF_ENCRYPTION. So the
// rendered root, which travels in the plan bundle, holds no secret, and a
// tofu started without Nova's environment cannot find the key provider
// and refuses to run rather than write plaintext state.
const (
	encryptionEnvVar = "TF_ENCRYPTION"
	keyProviderName  = "nova"
	// minPassphrase is what OpenTofu's pbkdf2 key provider accepts at
	// least; Nova refuses a shorter one before tofu runs.
	minPassphrase = 16
)

// keyProvider is the key provider's block for TF_ENCRYPTION. It is
// written by hclwrite, which escapes the passphrase (quotes, ${, %{) so
// that no passphrase can add to the configuration.
func keyProvider(passphrase string) (string, error) {
	if len(passphrase) < minPassphrase {
		what := "is empty"
		if passphrase != "" {
			what = "is too short"
		}
		return "", runner.Errorf(runner.StateEncryptionKeyMissing, "the contract's state is encrypted (backend.encryption) and the passphrase in $NOVA_STATE_PASSPHRASE %s: OpenTofu's pbkdf2 key provider needs at least %d characters", what, minPassphrase)
	}
	f := hclwrite.NewEmptyFile()
	kp := f.Body().AppendNewBlock("key_provider", []string{runner.KeyProviderPBKDF2, keyProviderName})
	kp.Body().SetAttributeValue("passphrase", cty.StringVal(passphrase))
	return string(f.Bytes()), nil
}
