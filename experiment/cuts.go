package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/nlp"
	"gbdmpc/plant/pumpstation"
)

// CutsConfig configures the cut study: for every station size, the same freshly drawn instances
// solved from scratch (no carried cuts, no agent) with GBD's classical optimality cuts, with the
// strengthened ones (gbd.Lagrangian.Strengthened) and with stage cuts (gbd.Settings.StageCuts),
// the master chosen as "auto" chooses it. Half the instances are drawn as the daemon sees them (pumpstation.Sample), half
// hard: a demand that needs two pumps most of the horizon (HardDemand).
type CutsConfig struct {
	Sizes     []int // binaries of pumpstation.SizedConfig
	Instances int   // per size (at least 1)
	// PerSize, when set, overrides Instances for the sizes it names (the largest stations'
	// solves run to the limit, so a study may draw fewer of them).
	PerSize map[int]int
	Seed    uint64
	// Limit is each solve's wall-clock budget (0: none); a solve it stops ends uncertified.
	Limit    time.Duration
	Settings gbd.Settings
	NewNLP   func() nlp.Solver // nil: gbd.NewNLP
	Progress func(size int, cuts string, i, n int)
}

// HardDemand is the mean demand of the cut study's hard instances, m³/h: more than any one pump
// of the larger stations delivers (the largest gives 150), so two run most of the horizon.
const HardDemand = 170

// CutsRow is one size and cut kind.
type CutsRow struct {
	Binaries  int     `json:"binaries"`
	Cuts      string  `json:"cuts"` // classical | strengthened | stage
	Master    string  `json:"master"`
	Instances int     `json:"instances"`
	Certified int     `json:"certified"`
	ItersP50  float64 `json:"iterations_p50"`
	ItersMax  int     `json:"iterations_max"`
	SolveP50  float64 `json:"solve_p50_s"`
	SolveMax  float64 `json:"solve_max_s"`
	// MeanGap is the mean certified gap UBD − LBD of the solves that ended uncertified (0: none).
	MeanGap float64 `json:"mean_gap_uncertified"`
}

// CutKinds are the cut study's methods, in the order of its rows: GBD's classical cut, the
// strengthened cut and the stage cut (gbd.Settings.StageCuts: tables per move block over the
// strengthened cut) without the start costs as hinges (gbd.Settings.NoHinges: the cuts price the
// start rows affinely), and both as the product makes them, with the hinges.
var CutKinds = []string{"classical", NoHinges("strengthened"), NoHinges("stage"), "strengthened", "stage"}

// NoHinges is the study's name of a cut kind made without the hinges.
func NoHinges(kind string) string { return kind + " (no hinges)" }

// Cuts runs the cut study.
func Cuts(ctx context.Context, cfg CutsConfig) ([]CutsRow, error) {
	if cfg.Instances < 1 {
		return nil, fmt.Errorf("cuts: need at least one instance per size")
	}
	for n, k := range cfg.PerSize {
		if k < 1 {
			return nil, fmt.Errorf("cuts: need at least one instance for %d binaries, have %d", n, k)
		}
	}
	newNLP := cfg.NewNLP
	if newNLP == nil {
		newNLP = gbd.NewNLP
	}
	var rows []CutsRow
	for _, n := range cfg.Sizes {
		c, err := pumpstation.SizedConfig(n)
		if err != nil {
			return nil, err
		}
		fam, err := pumpstation.NewFamily(c)
		if err != nil {
			return nil, err
		}
		ypb := fam.Admissible()
		newMaster, master, err := backend.MasterFor(backend.AutoMasterName, ypb)
		if err != nil {
			return nil, err
		}
		prof := pumpstation.DefaultProfile()
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(n)))
		count := cfg.Instances
		if k, ok := cfg.PerSize[n]; ok {
			count = k
		}
		ins := make([]pumpstation.Instance, count)
		for i := range ins {
			ins[i] = pumpstation.Sample(rng, &c, &prof)
			if i%2 == 1 {
				for t := range ins[i].Demand {
					ins[i].Demand[t] = HardDemand * (0.85 + 0.3*rng.Float64())
				}
			}
		}
		for _, kind := range CutKinds {
			row := CutsRow{Binaries: n, Cuts: kind, Master: master, Instances: len(ins)}
			var iters []int
			var times []float64
			for i := range ins {
				if err := ctx.Err(); err != nil {
					return rows, err
				}
				if cfg.Progress != nil {
					cfg.Progress(n, kind, i, len(ins))
				}
				set := cfg.Settings
				set.ClassicalCuts = kind == "classical"
				set.StageCuts = kind == "stage" || kind == NoHinges("stage")
				set.NoHinges = kind == NoHinges("strengthened") || kind == NoHinges("stage")
				if cfg.Limit > 0 {
					set.Deadline = time.Now().Add(cfg.Limit)
				}
				set.Interrupt = func() bool { return ctx.Err() != nil }
				eng := gbd.Engine{NLP: newNLP(), Master: newMaster()}
				t0 := time.Now()
				r, err := eng.Solve(pumpstation.Problem(&c, &ins[i]), ypb, set)
				if err != nil {
					return rows, fmt.Errorf("%d binaries, instance %d: %w", n, i, err)
				}
				times = append(times, time.Since(t0).Seconds())
				iters = append(iters, r.Iterations)
				switch {
				case r.Status == gbd.StatusOptimal || r.Status == gbd.StatusInfeasible:
					row.Certified++
				default:
					row.MeanGap += r.UBD - r.LBD
				}
			}
			if u := row.Instances - row.Certified; u > 0 {
				row.MeanGap /= float64(u)
			}
			row.ItersP50 = medianInt(iters)
			row.ItersMax = slices.Max(iters)
			row.SolveP50 = median(times)
			row.SolveMax = slices.Max(times)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

func medianInt(v []int) float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return median(f)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteCutsMarkdown writes the rows as a Markdown table.
func WriteCutsMarkdown(w io.Writer, rows []CutsRow) error {
	var b strings.Builder
	b.WriteString("| binaries | cuts | master | certified | iterations p50 / max | solve p50 / max s | mean gap uncertified € |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %d / %d | %.1f / %d | %.3f / %.3f | %.3g |\n",
			r.Binaries, r.Cuts, r.Master, r.Certified, r.Instances, r.ItersP50, r.ItersMax, r.SolveP50, r.SolveMax, r.MeanGap)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCutsJSON writes the rows as indented JSON.
func WriteCutsJSON(w io.Writer, rows []CutsRow) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// WriteCutsFigure draws iterations per solve (median, and the largest dashed) and the median
// solve time against the binaries, one colour per cut kind, on log axes.
func WriteCutsFigure(w io.Writer, rows []CutsRow) error {
	if len(rows) == 0 {
		return fmt.Errorf("cuts: no rows to draw")
	}
	colors := map[string]color.Color{
		"classical":              color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
		NoHinges("strengthened"): color.RGBA{R: 0x9e, G: 0xc5, B: 0xe8, A: 0xff},
		NoHinges("stage"):        color.RGBA{R: 0x98, G: 0xdf, B: 0x8a, A: 0xff},
		"strengthened":           color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		"stage":                  color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	}
	type line struct {
		name   string
		v      func(CutsRow) float64
		dashed bool
	}
	panels := []struct {
		title string
		lines []line
	}{
		{"GBD iterations per solve", []line{
			{"median", func(r CutsRow) float64 { return r.ItersP50 }, false},
			{"max", func(r CutsRow) float64 { return float64(r.ItersMax) }, true}}},
		{"solve time (s)", []line{
			{"median", func(r CutsRow) float64 { return r.SolveP50 }, false},
			{"max", func(r CutsRow) float64 { return r.SolveMax }, true}}},
	}
	var plots [][]*plot.Plot
	plots = append(plots, nil)
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "binaries"
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		ylo, yhi, xlo, xhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, r := range rows {
			for _, ln := range pn.lines {
				v := math.Max(ln.v(r), 1e-4)
				ylo, yhi = math.Min(ylo, v), math.Max(yhi, v)
			}
			xlo, xhi = math.Min(xlo, float64(r.Binaries)), math.Max(xhi, float64(r.Binaries))
		}
		p.Y.Min, p.Y.Max = ylo/2, yhi*2
		p.X.Min, p.X.Max = xlo-4, xhi+4
		for _, kind := range CutKinds {
			for _, ln := range pn.lines {
				var pts plotter.XYs
				for _, r := range rows {
					if r.Cuts == kind {
						pts = append(pts, plotter.XY{X: float64(r.Binaries), Y: math.Max(ln.v(r), 1e-4)})
					}
				}
				if len(pts) == 0 {
					continue
				}
				l, s, err := plotter.NewLinePoints(pts)
				if err != nil {
					return err
				}
				l.Color, s.Color = colors[kind], colors[kind]
				if ln.dashed {
					l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
				}
				p.Add(l, s)
				p.Legend.Add(kind+" cuts, "+ln.name, l, s)
			}
		}
		// A size where the limit stopped some solves: its figures are the limit's, not the
		// method's (fewer iterations in the same minute), which a cross over the point says.
		var stopped plotter.XYs
		for _, r := range rows {
			if r.Certified < r.Instances {
				for _, ln := range pn.lines {
					stopped = append(stopped, plotter.XY{X: float64(r.Binaries), Y: math.Max(ln.v(r), 1e-4)})
				}
			}
		}
		if len(stopped) > 0 {
			sc, err := plotter.NewScatter(stopped)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			sc.GlyphStyle.Radius = vg.Points(5)
			p.Add(sc)
			p.Legend.Add("some solves stopped by the limit", sc)
		}
		p.Legend.Top, p.Legend.Left = true, true
		plots[0] = append(plots[0], p)
	}
	return writePlotRow(w, plots[0], 360, 320)
}
