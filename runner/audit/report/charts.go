package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A chart is geometry computed here and drawn by the template: shapes with
// coordinates and classes (colours come from the page's CSS, so both
// colour schemes apply), each data mark carrying data-value, the same
// string its table shows.

type chart struct {
	ID            string
	Width, Height int
	Title, Desc   string
	Grid          []gridLine
	Labels        []label
	Lines         []polyline
	Marks         []mark
}

type gridLine struct {
	X1, Y1, X2, Y2 string
	Class          string
}

type label struct {
	X, Y, Text, Anchor, Class string
}

type polyline struct {
	Points, Class string
}

// mark is one data point: a rect (X, Y, W, H) or a circle (X, Y, R).
type mark struct {
	Shape          string
	X, Y, W, H, R  string
	Class          string
	Value, Tooltip string
}

const (
	chartWidth = 720
	marginL    = 92
	marginR    = 16
	marginT    = 14
	marginB    = 36
)

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// linear maps [d0, d1] onto [r0, r1].
type linear struct{ d0, d1, r0, r1 float64 }

func (s linear) at(v float64) float64 {
	if s.d1 == s.d0 {
		return (s.r0 + s.r1) / 2
	}
	return s.r0 + (v-s.d0)/(s.d1-s.d0)*(s.r1-s.r0)
}

// timeScale spans from..to over the plot's width, padded so the first and
// last points are not on the frame.
func timeScale(from, to time.Time) (linear, time.Time, time.Time) {
	if !to.After(from) {
		from, to = from.Add(-time.Minute), to.Add(time.Minute)
	}
	pad := to.Sub(from) / 20
	from, to = from.Add(-pad), to.Add(pad)
	return linear{float64(from.Unix()), float64(to.Unix()), marginL, chartWidth - marginR}, from, to
}

// timeAxis labels five instants between from and to.
func (c *chart) timeAxis(x linear, from, to time.Time) {
	span := to.Sub(from)
	layout := "2006-01-02"
	switch {
	case span < 36*time.Hour:
		layout = "15:04:05"
	case span < 60*24*time.Hour:
		layout = "01-02 15:04"
	}
	bottom := float64(c.Height - marginB)
	for i := range 5 {
		t := from.Add(span * time.Duration(i) / 4)
		px := x.at(float64(t.Unix()))
		c.Grid = append(c.Grid, gridLine{X1: num(px), Y1: num(marginT), X2: num(px), Y2: num(bottom), Class: "grid"})
		anchor := "middle"
		if i == 0 {
			anchor = "start"
		} else if i == 4 {
			anchor = "end"
		}
		c.Labels = append(c.Labels, label{X: num(px), Y: num(bottom + 16), Text: t.UTC().Format(layout), Anchor: anchor, Class: "tick"})
	}
	c.Labels = append(c.Labels, label{X: num(chartWidth - marginR), Y: num(bottom + 30), Text: "UTC", Anchor: "end", Class: "tick"})
}

// valueAxis draws four gridlines up to max, labelled by format.
func (c *chart) valueAxis(y linear, top float64, format func(float64) string) {
	for i := range 5 {
		v := top * float64(i) / 4
		py := y.at(v)
		c.Grid = append(c.Grid, gridLine{X1: num(marginL), Y1: num(py), X2: num(chartWidth - marginR), Y2: num(py), Class: "grid"})
		c.Labels = append(c.Labels, label{X: num(marginL - 6), Y: num(py + 4), Text: format(v), Anchor: "end", Class: "tick"})
	}
}

// bar is one bar of a bar chart.
type bar struct {
	Value   float64
	Text    string // the value as the table shows it
	Class   string
	Tooltip string
}

// barGroup is the bars at one x position (one per series), with the
// position's label.
type barGroup struct {
	Label string
	Bars  []bar
}

// barChart draws groups of vertical bars from 0 to max.
func barChart(id, title, desc string, groups []barGroup, top float64, format func(float64) string) chart {
	c := chart{ID: id, Width: chartWidth, Height: 240, Title: title, Desc: desc}
	bottom := float64(c.Height - marginB)
	y := linear{0, top, bottom, marginT}
	c.valueAxis(y, top, format)
	slot := float64(chartWidth-marginL-marginR) / float64(max1(len(groups)))
	every := 1 + len(groups)/16
	for i, g := range groups {
		n := max1(len(g.Bars))
		w := min(slot*0.8/float64(n), 48)
		x0 := marginL + slot*float64(i) + (slot-w*float64(n))/2
		for j, b := range g.Bars {
			top := y.at(b.Value)
			c.Marks = append(c.Marks, mark{Shape: "rect", X: num(x0 + w*float64(j)), Y: num(top), W: num(w * 0.92), H: num(max(bottom-top, 0.5)),
				Class: b.Class, Value: b.Text, Tooltip: b.Tooltip})
		}
		if i%every == 0 && g.Label != "" {
			c.Labels = append(c.Labels, label{X: num(marginL + slot*(float64(i)+0.5)), Y: num(bottom + 16), Text: g.Label, Anchor: "middle", Class: "tick"})
		}
	}
	return c
}

// hbar is one row of a horizontal bar chart.
type hbar struct {
	Label string
	bar
}

// hbarChart draws one horizontal bar per row, labelled on the left.
func hbarChart(id, title, desc string, rows []hbar, top float64, format func(float64) string) chart {
	const rowH = 26
	c := chart{ID: id, Width: chartWidth, Height: marginT + marginB + rowH*max1(len(rows)), Title: title, Desc: desc}
	left := 260.0
	x := linear{0, top, left, chartWidth - marginR}
	bottom := float64(c.Height - marginB)
	for i := range 5 {
		v := top * float64(i) / 4
		px := x.at(v)
		c.Grid = append(c.Grid, gridLine{X1: num(px), Y1: num(marginT), X2: num(px), Y2: num(bottom), Class: "grid"})
		c.Labels = append(c.Labels, label{X: num(px), Y: num(bottom + 16), Text: format(v), Anchor: "middle", Class: "tick"})
	}
	for i, r := range rows {
		top := float64(marginT + rowH*i + 4)
		c.Marks = append(c.Marks, mark{Shape: "rect", X: num(left), Y: num(top), W: num(max(x.at(r.Value)-left, 0.5)), H: num(rowH - 8), Class: r.Class, Value: r.Text, Tooltip: r.Tooltip})
		c.Labels = append(c.Labels, label{X: num(left - 8), Y: num(top + 13), Text: clip(r.Label, 40), Anchor: "end", Class: "cat"})
	}
	return c
}

// point is one point of a series over time.
type point struct {
	At      time.Time
	Value   float64
	Text    string
	Tooltip string
}

// series is a line of points, drawn in its class's colour.
type series struct {
	Class  string
	Points []point
}

// lineChart draws series over time, values from 0 to max.
func lineChart(id, title, desc string, all []series, top float64, format func(float64) string) chart {
	c := chart{ID: id, Width: chartWidth, Height: 260, Title: title, Desc: desc}
	var from, to time.Time
	for _, s := range all {
		for _, p := range s.Points {
			if from.IsZero() || p.At.Before(from) {
				from = p.At
			}
			if p.At.After(to) {
				to = p.At
			}
		}
	}
	x, from, to := timeScale(from, to)
	bottom := float64(c.Height - marginB)
	y := linear{0, top, bottom, marginT}
	c.valueAxis(y, top, format)
	c.timeAxis(x, from, to)
	for _, s := range all {
		var pts []string
		for _, p := range s.Points {
			px, py := x.at(float64(p.At.Unix())), y.at(p.Value)
			pts = append(pts, num(px)+","+num(py))
			c.Marks = append(c.Marks, mark{Shape: "circle", X: num(px), Y: num(py), R: "2.5", Class: s.Class, Value: p.Text, Tooltip: p.Tooltip})
		}
		if len(pts) > 1 {
			c.Lines = append(c.Lines, polyline{Points: strings.Join(pts, " "), Class: s.Class})
		}
	}
	return c
}

// lane is one row of the timeline.
type lane struct {
	Label  string
	Points []point
	Class  []string // per point
}

// timelineChart draws one lane per environment with a point per apply,
// and joins the points of one promotion across lanes.
func timelineChart(id, title, desc string, lanes []lane, joins [][2]int) chart {
	const laneH = 44
	c := chart{ID: id, Width: chartWidth, Height: marginT + marginB + laneH*len(lanes), Title: title, Desc: desc}
	var from, to time.Time
	for _, l := range lanes {
		for _, p := range l.Points {
			if from.IsZero() || p.At.Before(from) {
				from = p.At
			}
			if p.At.After(to) {
				to = p.At
			}
		}
	}
	x, from, to := timeScale(from, to)
	c.timeAxis(x, from, to)
	type pos struct{ x, y float64 }
	var at []pos
	for i, l := range lanes {
		ly := float64(marginT + laneH*i + laneH/2)
		c.Grid = append(c.Grid, gridLine{X1: num(marginL), Y1: num(ly), X2: num(chartWidth - marginR), Y2: num(ly), Class: "lane"})
		c.Labels = append(c.Labels, label{X: num(marginL - 10), Y: num(ly + 4), Text: l.Label, Anchor: "end", Class: "cat"})
		for j, p := range l.Points {
			px := x.at(float64(p.At.Unix()))
			at = append(at, pos{px, ly})
			c.Marks = append(c.Marks, mark{Shape: "circle", X: num(px), Y: num(ly), R: "6", Class: l.Class[j], Value: p.Text, Tooltip: p.Tooltip})
		}
	}
	for _, j := range joins {
		a, b := at[j[0]], at[j[1]]
		c.Lines = append(c.Lines, polyline{Points: fmt.Sprintf("%s,%s %s,%s", num(a.x), num(a.y), num(b.x), num(b.y)), Class: "join"})
	}
	return c
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
