package report

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// One way to write each kind of number, used by the charts' marks and the
// tables under them alike: the test that every charted number is in its
// table compares these strings.

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// fmtDuration writes a duration in its two largest units: 42s, 5m 3s,
// 2h 5m, 3d 4h.
func fmtDuration(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDuration(-d)
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %dh", s/86400, s%86400/3600)
}

func fmtRate(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + " %" }

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

func fmtInt(n int) string { return strconv.Itoa(n) }

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// niceMax rounds v up to 1, 2 or 5 × 10^k, so axis ticks fall on round
// numbers.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceDuration rounds a duration up to a span whose quarters read well on
// an axis.
func niceDuration(d time.Duration) time.Duration {
	steps := []time.Duration{
		4 * time.Second, 20 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 10 * time.Minute, 20 * time.Minute,
		time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 24 * time.Hour, 2 * 24 * time.Hour, 4 * 24 * time.Hour,
		8 * 24 * time.Hour, 20 * 24 * time.Hour, 40 * 24 * time.Hour, 100 * 24 * time.Hour, 200 * 24 * time.Hour, 400 * 24 * time.Hour,
	}
	for _, s := range steps {
		if d <= s {
			return s
		}
	}
	return time.Duration(niceMax(float64(d)))
}
