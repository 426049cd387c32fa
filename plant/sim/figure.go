package sim

import (
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gbdmpc/plant/model"
	"gbdmpc/plant/pumpstation"
)

var (
	pumpColors = []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple, for configs with more pumps
	}
	black = color.Black
	red   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	grey  = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	dash  = []vg.Length{vg.Points(5), vg.Points(3)}
	dots  = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// writeFigure draws the run as stacked panels sharing the time axis (time of day, hours): level
// with its limits, pump states, flows against demand, price, solve time and certified gap.
func writeFigure(w io.Writer, recs []StepRecord, c *pumpstation.Config) error {
	if len(recs) == 0 {
		return fmt.Errorf("no steps to draw")
	}
	// x is the time of day at a step's start, continued past midnight so a run over several days
	// stays monotone; steps are drawn to their end.
	t0 := recs[0].Hour
	x := make([]float64, len(recs)+1)
	for k := range recs {
		x[k] = t0 + recs[k].TimeH
	}
	x[len(recs)] = x[len(recs)-1] + c.Dt
	xmin, xmax := x[0], x[len(recs)]

	series := func(v func(r *StepRecord) float64) plotter.XYs {
		pts := make(plotter.XYs, len(recs)+1)
		for k := range recs {
			pts[k] = plotter.XY{X: x[k], Y: v(&recs[k])}
		}
		pts[len(recs)] = plotter.XY{X: x[len(recs)], Y: pts[len(recs)-1].Y}
		return pts
	}
	step := func(p *plot.Plot, pts plotter.XYs, col color.Color, width vg.Length, dashes []vg.Length, legend string) error {
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Width, l.Dashes = col, width, dashes
		p.Add(l)
		if legend != "" {
			p.Legend.Add(legend, l)
		}
		return nil
	}
	hline := func(p *plot.Plot, y float64, col color.Color, dashes []vg.Length, legend string) error {
		return step(p, plotter.XYs{{X: xmin, Y: y}, {X: xmax, Y: y}}, col, vg.Points(1), dashes, legend)
	}
	newPanel := func(ylabel string) *plot.Plot {
		p := plot.New()
		p.Y.Label.Text = ylabel
		p.X.Min, p.X.Max = xmin, xmax
		p.X.Tick.Marker = hourTicks{}
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = false
		p.Legend.ThumbnailWidth = vg.Points(18)
		return p
	}
	var errs []error
	chk := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}

	// Level: what the plant did, against the hard limits and the reference.
	lvl := newPanel("level [m]")
	cost, viol := 0.0, 0
	for k := range recs {
		cost += recs[k].CostEUR
		if recs[k].Violation {
			viol++
		}
	}
	lvl.Title.Text = fmt.Sprintf("pump station, closed loop: %d steps of %g h, cost %.2f €, %d level violations",
		len(recs), c.Dt, cost, viol)
	lvl.Y.Min, lvl.Y.Max = c.PhysMin, c.PhysMax
	lvl.Y.Tick.Marker = evenTicks{step: 1}
	chk(hline(lvl, c.LevelMax, red, dash, fmt.Sprintf("limits %g / %g m", c.LevelMin, c.LevelMax)))
	chk(hline(lvl, c.LevelMin, red, dash, ""))
	chk(hline(lvl, c.LevelRef, grey, dots, fmt.Sprintf("reference %g m", c.LevelRef)))
	lpts := make(plotter.XYs, len(recs)+1)
	lpts[0] = plotter.XY{X: x[0], Y: recs[0].LevelStart}
	for k := range recs {
		lpts[k+1] = plotter.XY{X: x[k+1], Y: recs[k].LevelEnd}
	}
	if l, err := plotter.NewLine(lpts); err == nil {
		l.Color, l.Width = black, vg.Points(1.5)
		lvl.Add(l)
		lvl.Legend.Add("level", l)
	} else {
		chk(err)
	}

	// Pump states: one lane per pump, a bar while it runs over a thin line while it is off.
	np := len(recs[0].On)
	pumps := newPanel("pumps running")
	pumps.Y.Min, pumps.Y.Max = -0.6, float64(np)-0.4
	var ticks []plot.Tick
	for p := range np {
		lane := float64(p)
		chk(hline(pumps, lane, grey, nil, ""))
		for k := 0; k < len(recs); {
			if recs[k].On[p] == 0 {
				k++
				continue
			}
			end := k
			for end < len(recs) && recs[end].On[p] == 1 {
				end++
			}
			bar, err := plotter.NewLine(plotter.XYs{{X: x[k], Y: lane}, {X: x[end], Y: lane}})
			if err != nil {
				chk(err)
				break
			}
			bar.Color, bar.Width = pumpColors[p%len(pumpColors)], vg.Points(9)
			pumps.Add(bar)
			k = end
		}
		ticks = append(ticks, plot.Tick{Value: lane, Label: fmt.Sprintf("pump %d", p+1)})
	}
	pumps.Y.Tick.Marker = plot.ConstantTicks(ticks)

	// Flows: each pump's delivered flow, their sum, and the demand actually drawn and forecast.
	flows := newPanel("flow [m³/h]")
	flows.Y.Min = 0
	// The total goes underneath, wide and light, so that a pump running alone stays visible on it.
	chk(step(flows, series(func(r *StepRecord) float64 {
		s := 0.0
		for _, q := range r.FlowActual {
			s += q
		}
		return s
	}), color.RGBA{R: 0xbb, G: 0xbb, B: 0xbb, A: 0xff}, vg.Points(5), nil, "total inflow"))
	for p := range np {
		// Only while the pump runs, so that stopped pumps do not draw lines along zero.
		col := pumpColors[p%len(pumpColors)]
		first := true
		for k := 0; k < len(recs); {
			if recs[k].On[p] == 0 {
				k++
				continue
			}
			var seg plotter.XYs
			for ; k < len(recs) && recs[k].On[p] == 1; k++ {
				seg = append(seg, plotter.XY{X: x[k], Y: recs[k].FlowActual[p]})
			}
			seg = append(seg, plotter.XY{X: x[k], Y: seg[len(seg)-1].Y})
			legend := ""
			if first {
				legend, first = fmt.Sprintf("pump %d", p+1), false
			}
			chk(step(flows, seg, col, vg.Points(1.2), nil, legend))
		}
	}
	chk(step(flows, series(func(r *StepRecord) float64 { return r.DemandActual }), red, vg.Points(1.5), nil, "demand"))
	chk(step(flows, series(func(r *StepRecord) float64 { return r.DemandForecast }), red, vg.Points(1), dots, "forecast"))
	flows.Legend.Left = true

	price := newPanel("price [€/kWh]")
	price.Y.Min = 0
	for k := range recs {
		price.Y.Max = math.Max(price.Y.Max, recs[k].Price*1.15)
	}
	chk(step(price, series(func(r *StepRecord) float64 { return r.Price }), black, vg.Points(1.5), nil, ""))

	solve := newPanel("solve time [s]")
	solve.Y.Min = 0
	chk(step(solve, series(func(r *StepRecord) float64 { return r.SolveSeconds }), black, vg.Points(1), nil, ""))

	// Certified gap, with fallback periods (no gap) marked on the axis.
	gap := newPanel("certified gap\nUBD − LBD [€]")
	gap.X.Label.Text = "time of day [h]"
	gap.Y.Min = 0
	maxGap := 0.0
	for k := range recs {
		if g := recs[k].Gap(); !math.IsInf(g, 0) && !math.IsNaN(g) {
			maxGap = math.Max(maxGap, g)
		}
	}
	gap.Y.Max = math.Max(maxGap*1.1, 1e-3)
	chk(step(gap, series(func(r *StepRecord) float64 {
		if g := r.Gap(); !math.IsInf(g, 0) && !math.IsNaN(g) {
			return math.Max(g, 0)
		}
		return 0
	}), black, vg.Points(1), nil, ""))
	var fb plotter.XYs
	for k := range recs {
		if recs[k].Status == "fallback" {
			fb = append(fb, plotter.XY{X: x[k] + c.Dt/2, Y: 0})
		}
	}
	if len(fb) > 0 {
		if s, err := plotter.NewScatter(fb); err == nil {
			s.Color, s.Shape, s.Radius = red, draw.CrossGlyph{}, vg.Points(4.5)
			gap.Add(s)
			gap.Legend.Add("fallback", s)
		}
	}
	if len(errs) > 0 {
		return errs[0]
	}

	panels := []*plot.Plot{lvl, pumps, flows, price, solve, gap}
	heights := []float64{3, 1.6, 3, 1.4, 1.6, 1.6}
	for _, p := range panels[:len(panels)-1] {
		p.X.Tick.Label.Font.Size = 0 // one set of time labels, at the bottom
	}
	return model.DrawStacked(w, panels, heights, 0)
}

// hourTicks marks every 3 h (every hour on short runs) with the time of day as hh:00.
type hourTicks struct{}

func (hourTicks) Ticks(min, max float64) []plot.Tick {
	stepH := 3.0
	if max-min <= 8 {
		stepH = 1
	}
	var ts []plot.Tick
	for v := math.Ceil(min/stepH) * stepH; v <= max+1e-9; v += stepH {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%02d:00", int(math.Mod(v, 24)))})
	}
	for v := math.Ceil(min); v <= max+1e-9; v++ {
		if math.Mod(v, stepH) != 0 {
			ts = append(ts, plot.Tick{Value: v}) // minor tick
		}
	}
	return ts
}

// evenTicks labels every multiple of step.
type evenTicks struct{ step float64 }

func (e evenTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for v := math.Ceil(min/e.step) * e.step; v <= max+1e-9; v += e.step {
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf("%g", v)})
	}
	return ts
}
