package jsonschema

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// TestNumberTextMatchesXText: numbers in messages read as they did when
// golang.org/x/text's English printer wrote them (Nova no longer links it,
// its init being part of what start-up cost).
func TestNumberTextMatchesXText(t *testing.T) {
	p := message.NewPrinter(language.English)
	values := []float64{0, 1, -1, 0.5, 99.95, 100, 999, 1000, 999999, 525600, 525601, 1e6, 3600000, 3600001, 1e9,
		1e9 + 1, 123456.78, -123456.78, 1e-4, 1e-5, 1.5e-7, 1e20, 1e21, 1.2345678901234568e22, 5e-324,
		math.MaxFloat64, math.Inf(1), math.Inf(-1)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		values = append(values, math.Float64frombits(rng.Uint64()), rng.NormFloat64()*math.Pow(10, float64(rng.IntN(30)-10)))
	}
	for _, f := range values {
		if math.IsNaN(f) {
			continue
		}
		r := new(big.Rat)
		if !math.IsInf(f, 0) {
			r.SetFloat64(f)
		} else {
			// Beyond float64, as an integer of 400 digits is.
			r.SetString(strings.Replace(strconv.FormatFloat(math.Copysign(1, f), 'f', 0, 64), "1", "1"+strings.Repeat("0", 400), 1))
		}
		if got, want := numberText(r), p.Sprintf("%v", f); got != want {
			t.Errorf("numberText(%v) = %q, want %q", f, got, want)
		}
	}
	for _, n := range []int{0, 1, 12, 999, 1000, 4001, 65536, 1234567890} {
		if got, want := countText(n), p.Sprintf("%d", n); got != want {
			t.Errorf("countText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRatTakesJSONNumbersOnly: big.Rat reads more than JSON allows, and
// reading a huge exponent exactly would take minutes.
func TestRatTakesJSONNumbersOnly(t *testing.T) {
	for _, s := range []string{"0", "-0", "1.5", "-12.25e+3", "1E-7", "12345678901234567890123", "1e10000"} {
		if _, err := rat(json.Number(s)); err != nil {
			t.Errorf("rat(%s): %v", s, err)
		}
	}
	for _, s := range []string{"", "-", "007", "+1", ".5", "1.", "1e", "1e+", "0x1F", "1/3", "Inf", "NaN", "1_000", " 1", "1e10001", "1e-99999999999999999999"} {
		if _, err := rat(json.Number(s)); err == nil {
			t.Errorf("rat(%q) accepted", s)
		}
	}
}
