package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/sim"
)

// ScalingMethod is one controller of the scaling benchmark: classical GBD when Policy is nil.
type ScalingMethod struct {
	Name string
	// Policy builds the agent for a station (nil function: classical GBD; a nil result skips the size).
	Policy func(fam *pumpstation.Family) (gbd.Policy, error)
}

// ScalingConfig configures the scaling benchmark: for every station size, a closed loop of Steps
// control periods per method, same simulator seed and carried cuts, as the daemon runs it. The
// master is Master's, "auto" by default (backend.MasterFor).
type ScalingConfig struct {
	Sizes      []int // binaries of pumpstation.SizedConfig
	Steps      int
	StepBudget time.Duration // per-step deadline (0: none, i.e. sim's default of 5 s)
	SimSeed    uint64
	Methods    []ScalingMethod
	Settings   gbd.Settings
	NewNLP     func() nlp.Solver // nil: gbd.NewNLP
	CarryPool  int               // cuts kept for carrying (0: gbd.DefaultPoolSize)
	// Master is the master back-end (a backend.MasterNames entry; "" is auto: what the shipped
	// configs run, enum while Y_pb is enumerated and staged beyond).
	Master   string
	Progress func(size int, method string, step, steps int)
}

// ScalingRow is one size and method: the table of the real-plant-sizes issue.
type ScalingRow struct {
	Binaries   int     `json:"binaries"`
	Admissible float64 `json:"admissible"` // |Y_pb| (exact count, pumpstation.CountAdmissible)
	Method     string  `json:"method"`
	Master     string  `json:"master"`
	Steps      int     `json:"steps"`
	// Per step means.
	Iterations float64 `json:"iterations_per_step"`
	Carried    float64 `json:"carried_cuts_per_step"`
	MasterMs   float64 `json:"master_ms_per_step"`
	NLPMs      float64 `json:"nlp_ms_per_step"`
	StepP50Ms  float64 `json:"step_p50_ms"`
	StepP95Ms  float64 `json:"step_p95_ms"`
	// Optimal counts steps certified within ε; Gap steps that ended at the deadline with a plan and
	// a certified gap; Missed steps without a solved plan (fallback or safe action).
	Optimal int     `json:"optimal"`
	Gap     int     `json:"gap"`
	Missed  int     `json:"missed"`
	MeanGap float64 `json:"mean_certified_gap"` // mean UBD − LBD over steps with a plan (0 when optimal)
	Cost    float64 `json:"closed_loop_cost_eur"`
	// SameAsClassical counts steps whose certified objective equals classical GBD's at the same step:
	// both certified within ε, from the same measurement (levels within sameLevelTol), objectives
	// within ε of each other (what two ε-certificates of one optimum allow); -1 for the classical row.
	SameAsClassical int `json:"same_as_classical"`
	// AgentSelected is the share of master iterations whose next iterate was the agent's (accepted
	// over proposed, as Table II counts it); NaN without an agent.
	AgentSelected float64 `json:"agent_selected"`
}

// Scaling runs the benchmark. A method whose Policy returns no agent for a size is left out of that
// size's rows; any error ends the run with the rows so far.
func Scaling(ctx context.Context, cfg ScalingConfig) ([]ScalingRow, error) {
	if cfg.Steps < 1 || len(cfg.Sizes) == 0 || len(cfg.Methods) == 0 {
		return nil, fmt.Errorf("scaling: need sizes, methods and at least one step")
	}
	newNLP := cfg.NewNLP
	if newNLP == nil {
		newNLP = gbd.NewNLP
	}
	var rows []ScalingRow
	for _, n := range cfg.Sizes {
		pc, err := pumpstation.SizedConfig(n)
		if err != nil {
			return nil, err
		}
		fam, err := pumpstation.NewFamily(pc)
		if err != nil {
			return nil, err
		}
		count := pumpstation.CountAdmissible(&pc)
		var classical *sim.Run
		for _, m := range cfg.Methods {
			if err := ctx.Err(); err != nil {
				return rows, err
			}
			var pol gbd.Policy
			if m.Policy != nil {
				if pol, err = m.Policy(fam); err != nil {
					return rows, fmt.Errorf("scaling: %d binaries, %s: %w", n, m.Name, err)
				}
				if pol == nil {
					continue // no agent for this size
				}
			}
			sc := sim.ConfigFor(pc)
			sc.Seed = cfg.SimSeed
			name, size := m.Name, n
			newMaster, _, err := backend.MasterFor(cfg.Master, fam.Admissible())
			if err != nil {
				return rows, err
			}
			run, err := sim.RunClosedLoop(ctx, sim.LoopOptions{
				Sim: sc, Steps: cfg.Steps, StepBudget: cfg.StepBudget,
				MPC: mpc.Options{NLP: newNLP(), NewMaster: newMaster,
					Policy: pol, Settings: cfg.Settings, CarryPool: cfg.CarryPool},
				OnStep: func(r sim.StepRecord) {
					if cfg.Progress != nil {
						cfg.Progress(size, name, r.Step+1, cfg.Steps)
					}
				},
			})
			if err != nil {
				return rows, fmt.Errorf("scaling: %d binaries, %s: %w", n, m.Name, err)
			}
			row := scalingRow(n, count, m.Name, newMaster().Name(), run, classical, cfg.Settings.Eps)
			if m.Policy == nil && classical == nil {
				classical = run
				row.SameAsClassical = -1
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// sameLevelTol is how far two runs' measured levels may differ and still be the same measurement.
// The same plan's flows, solved from different warm starts, differ in the last digits, so two
// closed loops that take the same decisions drift apart by about 1e-12 m a step; a different plan
// moves the level by millimetres or more.
const sameLevelTol = 1e-6

func scalingRow(n int, count float64, method, master string, run, classical *sim.Run, eps float64) ScalingRow {
	if eps <= 0 {
		eps = 1e-3 // gbd's default ε
	}
	row := ScalingRow{Binaries: n, Admissible: count, Method: method, Master: master, Steps: len(run.Steps), AgentSelected: math.NaN()}
	var times []float64
	var proposed, accepted, gaps, planned float64
	for k := range run.Steps {
		r := &run.Steps[k]
		row.Iterations += float64(r.Iterations)
		row.Carried += float64(r.Carried)
		row.MasterMs += 1e3 * r.MasterSeconds
		row.NLPMs += 1e3 * r.NLPSeconds
		times = append(times, 1e3*r.SolveSeconds)
		switch {
		case r.Status == mpc.StatusFallback || r.Safe:
			row.Missed++
		case r.Status == mpc.StatusOptimal && r.UBD-r.LBD <= eps:
			row.Optimal++
			planned++
		default:
			row.Gap++
			planned++
			if g := r.UBD - r.LBD; !math.IsInf(g, 0) && !math.IsNaN(g) {
				gaps += g
			}
		}
		proposed += float64(r.Agent.Proposed)
		accepted += float64(r.Agent.Accepted)
		if classical != nil && k < len(classical.Steps) {
			c := &classical.Steps[k]
			same := math.Abs(c.LevelStart-r.LevelStart) <= sameLevelTol &&
				c.Status == mpc.StatusOptimal && r.Status == mpc.StatusOptimal &&
				math.Abs(c.Objective-r.Objective) <= eps
			if same {
				row.SameAsClassical++
			}
		}
	}
	s := float64(len(run.Steps))
	row.Iterations /= s
	row.Carried /= s
	row.MasterMs /= s
	row.NLPMs /= s
	row.StepP50Ms, row.StepP95Ms = quantile(times, 0.5), quantile(times, 0.95)
	if planned > 0 {
		row.MeanGap = gaps / planned
	}
	row.Cost = run.Summary.CostEUR
	if proposed > 0 {
		row.AgentSelected = accepted / proposed
	}
	return row
}

// WriteScalingMarkdown writes the rows as the table.
func WriteScalingMarkdown(w io.Writer, rows []ScalingRow) error {
	var b strings.Builder
	b.WriteString("| binaries | \\|Y_pb\\| | method | master | steps | iterations/step | carried cuts/step | master ms/step | NLP ms/step | step p50 / p95 ms | optimal / gap / missed | mean gap | cost € | same optimum as classical | agent selected |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		same := "—"
		if r.SameAsClassical >= 0 {
			same = fmt.Sprintf("%d/%d", r.SameAsClassical, r.Steps)
		}
		sel := "—"
		if !math.IsNaN(r.AgentSelected) {
			sel = fmt.Sprintf("%.0f %%", 100*r.AgentSelected)
		}
		fmt.Fprintf(&b, "| %d | %.4g | %s | %s | %d | %.1f | %.0f | %.1f | %.1f | %.0f / %.0f | %d / %d / %d | %.3g | %.2f | %s | %s |\n",
			r.Binaries, r.Admissible, r.Method, r.Master, r.Steps, r.Iterations, r.Carried, r.MasterMs, r.NLPMs, r.StepP50Ms, r.StepP95Ms,
			r.Optimal, r.Gap, r.Missed, r.MeanGap, r.Cost, same, sel)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteScalingJSON writes the rows as JSON (NaN as null).
func WriteScalingJSON(w io.Writer, rows []ScalingRow) error {
	type out struct {
		ScalingRow
		AgentSelected *float64 `json:"agent_selected"`
	}
	o := make([]out, len(rows))
	for i, r := range rows {
		o[i].ScalingRow = r
		if !math.IsNaN(r.AgentSelected) {
			v := r.AgentSelected
			o[i].AgentSelected = &v
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// WriteScalingFigure draws step time (p50 and p95, log scale) and master and NLP time per step
// against the number of binaries, one line per method.
func WriteScalingFigure(w io.Writer, rows []ScalingRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("scaling: no rows to draw")
	}
	colors := []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	}
	var methods []string
	for _, r := range rows {
		if !slices.Contains(methods, r.Method) {
			methods = append(methods, r.Method)
		}
	}
	panels := []struct {
		title string
		v     func(r ScalingRow) float64
	}{
		{"step time p50 (ms)", func(r ScalingRow) float64 { return r.StepP50Ms }},
		{"step time p95 (ms)", func(r ScalingRow) float64 { return r.StepP95Ms }},
		{"master time per step (ms)", func(r ScalingRow) float64 { return r.MasterMs }},
		{"NLP time per step (ms)", func(r ScalingRow) float64 { return r.NLPMs }},
	}
	plots := make([][]*plot.Plot, 1)
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "binaries"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		// Explicit ranges: gonum widens a range of one value by ±1, below zero on a log axis.
		ylo, yhi, xlo, xhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, r := range rows {
			v := math.Max(pn.v(r), 1e-3)
			ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
			xlo, xhi = math.Min(xlo, float64(r.Binaries)), math.Max(xhi, float64(r.Binaries))
		}
		p.Y.Min, p.Y.Max = ylo/2, yhi*2
		p.X.Min, p.X.Max = xlo-4, xhi+4
		for mi, m := range methods {
			var pts plotter.XYs
			for _, r := range rows {
				if r.Method == m {
					pts = append(pts, plotter.XY{X: float64(r.Binaries), Y: math.Max(pn.v(r), 1e-3)})
				}
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return err
			}
			l.Color, s.Color = colors[mi%len(colors)], colors[mi%len(colors)]
			p.Add(l, s)
			p.Legend.Add(m, l, s)
		}
		p.Legend.Top, p.Legend.Left = true, true
		plots[0] = append(plots[0], p)
	}
	return writePlotRow(w, plots[0], 300, 300)
}

// writePlotRow draws the plots side by side, each width by height points, aligned, as a PNG.
func writePlotRow(w io.Writer, plots []*plot.Plot, width, height float64) error {
	img := vgimg.New(vg.Points(width*float64(len(plots))), vg.Points(height))
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{plots}, tiles, draw.New(img))
	for j := range plots {
		plots[j].Draw(canvases[0][j])
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}
