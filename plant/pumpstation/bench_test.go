package pumpstation

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
)

// reportMedian adds the median of per-op durations (the mean that ns/op shows is pulled up by the
// occasional slow solve).
func reportMedian(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1e3, "median-ms")
}

func benchInstances(n int) (*Config, []*gbd.Problem, *gbd.Admissible) {
	c := DefaultConfig()
	prof := DefaultProfile()
	rng := rand.New(rand.NewPCG(77, 7))
	ps := make([]*gbd.Problem, n)
	for i := range ps {
		in := Sample(rng, &c, &prof)
		ps[i] = Problem(&c, &in)
	}
	ypb, _ := Admissible(&c)
	return &c, ps, ypb
}

// BenchmarkStep is one control step's solve: classical GBD over seeded instances, cycling through
// them, from a cold start, with each master back-end.
func BenchmarkStep(b *testing.B) {
	_, ps, ypb := benchInstances(20)
	for _, m := range masters {
		b.Run(m.name, func(b *testing.B) {
			var times []time.Duration
			iters, i := 0, 0
			eng := gbd.Engine{Master: m.new()}
			for b.Loop() {
				t0 := time.Now()
				r, err := eng.Solve(ps[i%len(ps)], ypb, gbd.Settings{})
				times = append(times, time.Since(t0))
				if err != nil || r.Status != gbd.StatusOptimal {
					b.Fatalf("instance %d: %v %v", i%len(ps), err, r.Status)
				}
				iters += r.Iterations
				i++
			}
			reportMedian(b, times)
			b.ReportMetric(float64(iters)/float64(i), "iterations/op")
		})
	}
}

// BenchmarkSubproblemNLP is one S(y) for a feasible assignment (pumps 2 and 3 throughout), as the
// engine evaluates it: compiled once, bounds set for y, Ipopt from the last solution.
func BenchmarkSubproblemNLP(b *testing.B) {
	benchSubproblem(b, func(c *Config, y []float64) {
		for bb := range c.Blocks {
			y[c.YIndex(1, bb)], y[c.YIndex(2, bb)] = 1, 1
		}
	}, true)
}

// BenchmarkSubproblemInfeasible is S(y) then F(y) for an assignment that empties the tank (nothing
// runs), which yields a feasibility cut.
func BenchmarkSubproblemInfeasible(b *testing.B) {
	benchSubproblem(b, func(*Config, []float64) {}, false)
}

func benchSubproblem(b *testing.B, set func(*Config, []float64), feasible bool) {
	c := DefaultConfig()
	in := SampleAt(rand.New(rand.NewPCG(9, 10)), &c, ptr(DefaultProfile()), 18)
	p := Problem(&c, &in)
	y := make([]float64, c.NY())
	set(&c, y)
	sub := gbd.NewSubproblems(p, nil, nlp.Options{})
	var times []time.Duration
	iters, n := 0, 0
	for b.Loop() {
		t0 := time.Now()
		r, err := sub.Evaluate(y, 0)
		times = append(times, time.Since(t0))
		if err != nil || r.Feasible != feasible {
			b.Fatalf("feasible=%v err=%v", r.Feasible, err)
		}
		iters += r.Iterations
		n++
	}
	reportMedian(b, times)
	b.ReportMetric(float64(iters)/float64(n), "ipopt-iterations/op")
}

// BenchmarkLimits prices the steps whose limits are in doubt against a normal one, side by side:
// the reachability pre-check, the hard solve of a servable forecast (the reference), the soft
// solve of the same forecast (what the soft formulation costs by itself), the soft solve of the
// issue's capacity shortfall (what a relaxed step costs after the pre-check), and, for a forecast
// only the move blocking makes unservable, the hard solve that proves it infeasible and the soft
// solve after it. Classical GBD, enum master, cold start.
func BenchmarkLimits(b *testing.B) {
	c := DefaultConfig()
	ypb, err := Admissible(&c)
	if err != nil {
		b.Fatal(err)
	}
	servableIn, short, trap := constant(&c, 3, 120, []int{0, 1, 0}), shortfall(&c), blockTrap(&c)
	soft := func(in Instance) *gbd.Problem { p, _ := SoftProblem(&c, &in); return p }
	b.Run("reach", func(b *testing.B) {
		for b.Loop() {
			if _, _, ok := Reach(&c, &short); ok {
				b.Fatal("the shortfall passed the pre-check")
			}
		}
	})
	for _, bc := range []struct {
		name string
		p    *gbd.Problem
		want gbd.Status
	}{
		{"hard/servable", Problem(&c, &servableIn), gbd.StatusOptimal},
		{"soft/servable", soft(servableIn), gbd.StatusOptimal},
		{"soft/shortfall", soft(short), gbd.StatusOptimal},
		{"hard/blocktrap", Problem(&c, &trap), gbd.StatusInfeasible},
		{"soft/blocktrap", soft(trap), gbd.StatusOptimal},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var times []time.Duration
			iters, n := 0, 0
			for b.Loop() {
				t0 := time.Now()
				r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(bc.p, ypb, gbd.Settings{})
				times = append(times, time.Since(t0))
				if err != nil || r.Status != bc.want {
					b.Fatalf("%v %v", err, r.Status)
				}
				iters += r.Iterations
				n++
			}
			reportMedian(b, times)
			b.ReportMetric(float64(iters)/float64(n), "iterations/op")
		})
	}
}
