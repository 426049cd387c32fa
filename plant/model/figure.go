package model

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"gbdmpc/mpc"
)

var (
	palette = []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
		color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
		color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	}
	// forecastColors keep the forecasts apart from the inputs and units drawn in palette.
	forecastColors = []color.Color{
		color.Black,
		color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
		color.RGBA{R: 0x00, G: 0x80, B: 0x80, A: 0xff}, // teal
		color.RGBA{R: 0x80, G: 0x80, B: 0x00, A: 0xff}, // olive
	}
	red    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	amber  = color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}
	grey   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// unitSuffixes turn the physical unit a model's names end in into its symbol. Names carry their
// units (soc_kwh, demand_m3h) because a model has no other place for them; the longest match
// wins, so price_eur_kwh reads €/kWh and not kWh.
var unitSuffixes = []struct{ suffix, unit string }{
	{"_eur_kwh", "€/kWh"}, {"_eur_mwh", "€/MWh"}, {"_eur_m3", "€/m³"}, {"_eur", "€"},
	{"_m3h", "m³/h"}, {"_m3", "m³"}, {"_kwh", "kWh"}, {"_mwh", "MWh"}, {"_kw", "kW"}, {"_mw", "MW"},
	{"_degc", "°C"}, {"_bar", "bar"}, {"_pct", "%"}, {"_m", "m"},
}

// physicalUnit is the unit name ends in ("" when it names none).
func physicalUnit(name string) string {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s.suffix) {
			return s.unit
		}
	}
	return ""
}

// withUnit labels an axis by a name and its unit: "soc_kwh [kWh]".
func withUnit(label, unit string) string {
	if unit == "" {
		return label
	}
	return label + " [" + unit + "]"
}

// WriteFigure draws a closed loop of the model as stacked panels over one time axis (hours since
// the start, dt of the model being in hours): every state against its hard and soft limits, the
// units' on/off lanes, the inputs grouped by physical unit, the forecasts grouped likewise (what
// came true solid, what the measurement forecast for the step dotted), and every step's solve time
// against the deadline (0: none), steps that were not certified marked. Every series carries the
// model's name; every axis the unit its names end in.
func (f *Family) WriteFigure(w io.Writer, recs []LoopRecord, deadline time.Duration) error {
	if len(recs) == 0 {
		return fmt.Errorf("model: no steps to draw")
	}
	m := f.m
	n := len(recs)
	x := make([]float64, n+1)
	for k := range x {
		x[k] = float64(k) * m.Dt
	}
	xmax := x[n]
	sm := f.Summarize(recs)

	var errs []error
	chk := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	newPanel := func(ylabel string) *plot.Plot {
		p := plot.New()
		p.Y.Label.Text = ylabel
		p.X.Min, p.X.Max = 0, xmax
		p.X.Tick.Marker = hourTicks{}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.ThumbnailWidth = vg.Points(18)
		p.Legend.Padding = vg.Points(1)
		return p
	}
	// series is one value per step, held over the step.
	series := func(v func(r *LoopRecord) float64) plotter.XYs {
		pts := make(plotter.XYs, n+1)
		for k := range recs {
			pts[k] = plotter.XY{X: x[k], Y: v(&recs[k])}
		}
		pts[n] = plotter.XY{X: x[n], Y: pts[n-1].Y}
		return pts
	}
	line := func(p *plot.Plot, pts plotter.XYs, steps bool, col color.Color, width vg.Length, dashes []vg.Length, legend string) {
		l, err := plotter.NewLine(pts)
		if err != nil {
			chk(err)
			return
		}
		if steps {
			l.StepStyle = plotter.PostStep
		}
		l.Color, l.Width, l.Dashes = col, width, dashes
		p.Add(l)
		if legend != "" {
			p.Legend.Add(legend, l)
		}
	}
	hline := func(p *plot.Plot, y float64, col color.Color, dashes []vg.Length, legend string) {
		line(p, plotter.XYs{{X: 0, Y: y}, {X: xmax, Y: y}}, false, col, vg.Points(1), dashes, legend)
	}

	var panels []*plot.Plot
	var heights []float64

	// States: the trajectory the plant followed (measured at each step's start, then its end),
	// against the hard limits (red) and the soft ones (amber).
	for s, st := range m.States {
		u := physicalUnit(st.Name)
		sp := ""
		if u != "" {
			sp = " " + u
		}
		p := newPanel(withUnit(st.Name, u))
		pts := make(plotter.XYs, n+1)
		pts[0] = plotter.XY{X: 0, Y: recs[0].Start[s]}
		for k := range recs {
			pts[k+1] = plotter.XY{X: x[k+1], Y: recs[k].States[s]}
		}
		traj, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		traj.Color, traj.Width = color.Black, vg.Points(1.5)
		p.Legend.Add(st.Name, traj) // first in the legend, drawn over the limits
		if st.HasMin {
			legend := fmt.Sprintf("hard min %g%s", st.Min, sp)
			if st.HasMax {
				legend = fmt.Sprintf("hard limits %g / %g%s", st.Min, st.Max, sp)
			}
			hline(p, st.Min, red, dashed, legend)
		}
		if st.HasMax {
			legend := ""
			if !st.HasMin {
				legend = fmt.Sprintf("hard max %g%s", st.Max, sp)
			}
			hline(p, st.Max, red, dashed, legend)
		}
		if st.HasSoftMin {
			hline(p, st.SoftMin, amber, dotted, fmt.Sprintf("soft min %g%s", st.SoftMin, sp))
		}
		if st.HasSoftMax {
			hline(p, st.SoftMax, amber, dotted, fmt.Sprintf("soft max %g%s", st.SoftMax, sp))
		}
		p.Add(traj)
		p.Y.Min, p.Y.Max = st.Lo, st.Hi
		panels, heights = append(panels, p), append(heights, 2.4)
	}
	panels[0].Title.Text = fmt.Sprintf("%s, closed loop: %d steps of %g h, cost %.2f%s, %d limit violations, %d of %d steps certified optimal",
		m.Name, n, m.Dt, sm.Cost, f.currency(), sm.HardBreaches, sm.Certified, n)

	// Units: one lane each, a bar while on.
	if len(m.Units) > 0 {
		p := newPanel("units on")
		p.Y.Min, p.Y.Max = -0.6, float64(len(m.Units))-0.4
		var ticks []plot.Tick
		for u, unit := range m.Units {
			lane := float64(len(m.Units) - 1 - u) // the first unit on top, as in the model file
			hline(p, lane, grey, nil, "")
			for k := 0; k < n; {
				if recs[k].On[u] == 0 {
					k++
					continue
				}
				end := k
				for end < n && recs[end].On[u] == 1 {
					end++
				}
				line(p, plotter.XYs{{X: x[k], Y: lane}, {X: x[end], Y: lane}}, false, palette[u%len(palette)], vg.Points(9), nil, "")
				k = end
			}
			ticks = append(ticks, plot.Tick{Value: lane, Label: unit.Name})
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		panels, heights = append(panels, p), append(heights, 0.5+0.3*float64(len(m.Units)))
	}

	// Inputs and forecasts, each grouped by physical unit, in the order the model names them.
	groups := func(names []string) (order []string, members map[string][]int) {
		members = map[string][]int{}
		for i, name := range names {
			u := physicalUnit(name)
			if _, ok := members[u]; !ok {
				order = append(order, u)
			}
			members[u] = append(members[u], i)
		}
		return order, members
	}
	var inNames, fcNames []string
	for _, in := range m.Inputs {
		inNames = append(inNames, in.Name)
	}
	for _, fc := range m.Forecasts {
		fcNames = append(fcNames, fc.Name)
	}
	// A gated input takes its unit's colour, the others the colours after the units'.
	inColor := make([]color.Color, len(m.Inputs))
	free := len(m.Units)
	for i, in := range m.Inputs {
		if in.Unit != "" {
			inColor[i] = palette[f.l.unitIdx[in.Unit]%len(palette)]
		} else {
			inColor[i] = palette[free%len(palette)]
			free++
		}
	}
	order, members := groups(inNames)
	for _, u := range order {
		p := newPanel(withUnit("inputs", u))
		lo := 0.0
		for _, i := range members[u] {
			in := &m.Inputs[i]
			lo = math.Min(lo, in.Lo)
			line(p, series(func(r *LoopRecord) float64 { return r.Inputs[i] }), true, inColor[i], vg.Points(1.3), nil, in.Name)
		}
		p.Y.Min = lo
		panels, heights = append(panels, p), append(heights, 2.2)
	}
	order, members = groups(fcNames)
	for _, u := range order {
		p := newPanel(withUnit("forecasts", u))
		for j, i := range members[u] {
			col := forecastColors[j%len(forecastColors)]
			line(p, series(func(r *LoopRecord) float64 { return r.Actual[i] }), true, col, vg.Points(1.5), nil, m.Forecasts[i].Name)
			line(p, series(func(r *LoopRecord) float64 { return r.Forecast[i] }), true, col, vg.Points(1), dotted, m.Forecasts[i].Name+" as forecast")
		}
		p.Y.Min = math.Min(0, p.Y.Min)
		panels, heights = append(panels, p), append(heights, 1.8)
	}

	// Solve time against the deadline; a step that was not certified optimal is marked red.
	p := newPanel("solve time [s]")
	p.X.Label.Text = "time since start [h]"
	p.Y.Min = 0
	line(p, series(func(r *LoopRecord) float64 { return r.SolveSeconds }), true, color.Black, vg.Points(1), nil, "")
	if deadline > 0 {
		hline(p, deadline.Seconds(), red, dashed, fmt.Sprintf("deadline %v", deadline))
	}
	var bad plotter.XYs
	for k := range recs {
		if recs[k].Status != mpc.StatusOptimal {
			bad = append(bad, plotter.XY{X: x[k] + m.Dt/2, Y: recs[k].SolveSeconds})
		}
	}
	if len(bad) > 0 {
		sc, err := plotter.NewScatter(bad)
		chk(err)
		if err == nil {
			sc.Color = red
			p.Add(sc)
			p.Legend.Add("not certified (gap or fallback)", sc)
		}
	}
	panels, heights = append(panels, p), append(heights, 1.6)

	if len(errs) > 0 {
		return errs[0]
	}
	for _, p := range panels[:len(panels)-1] {
		p.X.Tick.Label.Font.Size = 0 // one set of time labels, at the bottom
	}
	return DrawStacked(w, panels, heights, legendWidth)
}

// legendWidth is the width of the legend column.
const legendWidth = 2.6 * vg.Inch

// currency is " €" when the model's names price in euros (an _eur suffix), else "".
func (f *Family) currency() string {
	for name := range f.m.names {
		if strings.HasPrefix(physicalUnit(name), "€") {
			return " €"
		}
	}
	return ""
}

// DrawStacked writes a PNG of panels one above the other sharing their time axis, each its share
// of the height, their data areas aligned so that the time axis lines up: a model's figure and
// the built-in pump station's (plant/sim). With legendWidth > 0 the legends go in a column of
// that width right of the panels, where they cover no data; with 0 each panel draws its own.
func DrawStacked(w io.Writer, panels []*plot.Plot, heights []float64, legendWidth vg.Length) error {
	total := 0.0
	for _, h := range heights {
		total += h
	}
	img := vgimg.NewWith(vgimg.UseWH(12*vg.Inch+legendWidth, vg.Length(total+0.6)*vg.Inch), vgimg.UseDPI(110))
	dc := draw.New(img)
	pad := vg.Points(6)
	full := draw.Tiles{Rows: 1, Cols: 1, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}.At(dc, 0, 0)
	top, avail := full.Max.Y, full.Max.Y-full.Min.Y
	cans := make([]draw.Canvas, len(panels))
	legends := make([]draw.Canvas, len(panels))
	split := full.Max.X - legendWidth
	for i := range panels {
		h := avail * vg.Length(heights[i]/total)
		cans[i] = draw.Canvas{Canvas: full.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: full.Min.X, Y: top - h}, Max: vg.Point{X: split, Y: top}}}
		legends[i] = draw.Canvas{Canvas: full.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: split + vg.Points(8), Y: top - h}, Max: vg.Point{X: full.Max.X, Y: top - vg.Points(14)}}}
		top -= h
	}
	var left vg.Length
	for i, p := range panels {
		left = max(left, p.DataCanvas(cans[i]).Min.X-cans[i].Min.X)
	}
	for i, p := range panels {
		cans[i].Min.X += left - (p.DataCanvas(cans[i]).Min.X - cans[i].Min.X)
	}
	for i, p := range panels {
		if legendWidth == 0 {
			p.Draw(cans[i])
			continue
		}
		leg := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(cans[i])
		leg.Top, leg.Left = true, true
		leg.Draw(legends[i])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// hourTicks labels every hour on runs of up to 8 h, every 3 h up to 36 h, every 6 h up to 72 h and
// every 12 h beyond, with minor ticks every hour (every 3 h beyond 36 h).
type hourTicks struct{}

func (hourTicks) Ticks(lo, hi float64) []plot.Tick {
	step, minor := 12.0, 3.0
	switch {
	case hi-lo <= 8:
		step, minor = 1, 1
	case hi-lo <= 36:
		step, minor = 3, 1
	case hi-lo <= 72:
		step = 6
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%g h", v)})
	}
	for v := math.Ceil(lo/minor) * minor; v <= hi+1e-9; v += minor {
		if math.Mod(v, step) != 0 {
			ts = append(ts, plot.Tick{Value: v})
		}
	}
	return ts
}
