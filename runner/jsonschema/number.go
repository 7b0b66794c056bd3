package jsonschema

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// maxExponent bounds the exponent of a number compared exactly: big.Rat
// would otherwise build 10^exponent, and "1e999999999" would take minutes.
// float64 needs ±324; JSON written by people or tools needs far less.
const maxExponent = 10_000

// rat reads a JSON number exactly, so that 12345678901234567890123 and
// 0.1 compare as written rather than as their nearest float64.
func rat(n json.Number) (*big.Rat, error) {
	s := string(n)
	exp, ok := jsonNumberExponent(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a JSON number", s)
	}
	if exp > maxExponent || exp < -maxExponent {
		return nil, fmt.Errorf("number %s has an exponent beyond ±%d", s, maxExponent)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a JSON number", s)
	}
	return r, nil
}

// jsonNumberExponent checks s against JSON's number grammar and returns
// its explicit exponent (0 when there is none). big.Rat alone would also
// take "0x1F", "1/3" or "Inf".
func jsonNumberExponent(s string) (int, bool) {
	i := 0
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0, n > 1 && s[i-n] == '0':
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i == len(s) {
		return 0, true
	}
	if s[i] != 'e' && s[i] != 'E' {
		return 0, false
	}
	i++
	start := i
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if digits() == 0 || i != len(s) {
		return 0, false
	}
	exp, err := strconv.Atoi(s[start:])
	if err != nil {
		// Too many digits for an int is also far beyond maxExponent.
		return math.MaxInt, true
	}
	return exp, true
}

// numberOf reads an instance number exactly. Floats are read through
// their shortest decimal form, as encoding/json would write them.
func numberOf(v any) (*big.Rat, error) {
	var s string
	switch n := v.(type) {
	case json.Number:
		return rat(n)
	case float64:
		s = strconv.FormatFloat(n, 'g', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(n), 'g', -1, 32)
	default:
		s = fmt.Sprint(n)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%v is not a finite number", v)
	}
	return r, nil
}

// numberText writes a number as the messages Nova has always shown print
// it (they were produced by golang.org/x/text's English printer): the
// shortest float64 form, digits grouped in threes, exponents as ×10
// with superscript digits.
func numberText(r *big.Rat) string {
	f, _ := r.Float64()
	switch {
	case math.IsInf(f, 1):
		return "∞"
	case math.IsInf(f, -1):
		return "-∞"
	case f == 0:
		// big.Rat has no negative zero, but a tiny negative value
		// rounds to one.
		f = 0
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	mantissa, exp, scientific := strings.Cut(s, "e")
	if scientific {
		return mantissa + "×10" + superscript(strings.TrimPrefix(exp, "+"))
	}
	sign := ""
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = "-", rest
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac {
		frac = "." + frac
	}
	return sign + groupDigits(whole) + frac
}

// countText writes a count (a string length, never negative) as
// numberText would.
func countText(n int) string { return groupDigits(strconv.Itoa(n)) }

func groupDigits(digits string) string {
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

var superscripts = strings.NewReplacer(
	"-", "⁻", "0", "⁰", "1", "¹", "2", "²", "3", "³", "4", "⁴",
	"5", "⁵", "6", "⁶", "7", "⁷", "8", "⁸", "9", "⁹",
)

func superscript(s string) string { return superscripts.Replace(s) }
