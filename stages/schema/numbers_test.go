package schema_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// TestNumbersKeepTheirValue: every number a contract holds reaches the
// registry and the rendered HCL with the value the author wrote — in
// particular integers beyond int64 and float64 precision.
func TestNumbersKeepTheirValue(t *testing.T) {
	c, findings := schema.Parse([]byte(devContract+`inputs:
  big: 12345678901234567890123
  plus: +5
  negative: -3
  zero: 0
  leading: 007
  hex: 0x1F
  fraction: 1.5
  scientific: 1e6
`), "c.yml", "")
	if len(findings) > 0 {
		t.Fatalf("findings: %+v", findings)
	}
	want := map[string]any{
		"big": json.Number("12345678901234567890123"), "plus": json.Number("5"), "negative": json.Number("-3"),
		"zero": json.Number("0"), "leading": json.Number("7"), "hex": json.Number("31"),
		"fraction": json.Number("1.5"), "scientific": json.Number("1000000"),
	}
	if diff := cmp.Diff(want, c.Inputs); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestEnvOverrideOnlyRaisesTheGuard(t *testing.T) {
	for _, tt := range []struct {
		own, override string
		lowers        bool
	}{
		{"dev", "prod", false}, {"qa", "qa", false}, {"prod", "dr", false},
		{"prod", "dev", true}, {"dr", "prod", true}, {"qa", "dev", true},
	} {
		_, findings := schema.Parse([]byte(withEnv(drContract, tt.own)), "c.yml", runner.Environment(tt.override))
		got := len(findings) > 0 && findings[0].Reason == runner.ContractEnvOverrideLowers
		if got != tt.lowers {
			t.Errorf("%s contract with --env %s: findings %+v, want lowering refused = %v", tt.own, tt.override, findings, tt.lowers)
		}
	}
}
