package master_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/knob"
)

// The shared master suite: every gbd.Master back-end (the pure-Go enum and staged masters, and
// the CBC binding's) against brute force, side by side. It lives here, beside the back-ends'
// packages, because this is the one package that knows them all.

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol*(1+math.Abs(b)) }

// masterBackends is every gbd.Master implementation; each runs the same suite below.
func masterBackends() map[string]func() gbd.Master {
	return map[string]func() gbd.Master{
		"enum": func() gbd.Master { return &enum.Master{} },
		"cbc":  func() gbd.Master { return &cbc.Master{} },
		// The product's CBC master runs each solve in a worker process (backend.CBCMaster).
		"cbc-isolated": func() gbd.Master { return &cbc.Master{Options: cbc.Options{Isolate: true}} },
		"staged":       func() gbd.Master { return &staged.Master{} },
		// Its search on three goroutines, sharing one incumbent (Workers).
		"staged-parallel": func() gbd.Master { return &staged.Master{Workers: 3} },
		// Its search over the stages first to last instead of last to first.
		"staged-forward": func() gbd.Master { return &staged.Master{Forward: true} },
	}
}

func randomCuts(rng *rand.Rand, ny, n int, feasFrac float64) []gbd.Cut {
	cuts := make([]gbd.Cut, n)
	for k := range cuts {
		c := gbd.Cut{Coef: make([]float64, ny), Const: 100*rng.Float64() - 50}
		for i := range c.Coef {
			if rng.IntN(4) > 0 {
				c.Coef[i] = 40*rng.Float64() - 20
			}
		}
		if rng.Float64() < feasFrac {
			c.Kind = gbd.FeasibilityCut
			c.Const = -5 - 10*rng.Float64() // mostly satisfiable
		}
		cuts[k] = c
	}
	return cuts
}

func TestMasterBackendsAgreeWithBruteForce(t *testing.T) {
	for name, mk := range masterBackends() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 13))
			trials := knob.Size(200, 40)
			for trial := range trials {
				ny := 3 + rng.IntN(10)
				var pure []gbd.PureRow
				for i := 0; i+2 < ny; i += 3 {
					pure = append(pure, gbd.PureRow{Idx: []int{i, i + 1, i + 2}, Coef: []float64{1, 1, 1}, RHS: 2})
				}
				ypb, err := gbd.EnumerateAdmissible(ny, pure, 0)
				if err != nil {
					t.Fatal(err)
				}
				cuts := randomCuts(rng, ny, 1+rng.IntN(40), 0.3)
				m := mk()
				if err := m.Reset(ny, pure, ypb); err != nil {
					t.Fatal(err)
				}
				for k := range cuts {
					m.AddCut(&cuts[k])
				}
				res, err := m.Solve(0, nil)
				if err != nil {
					t.Fatal(err)
				}
				best, mu := gbdtest.BruteMaster(ypb, cuts)
				if best < 0 {
					if res.Status != gbd.MasterInfeasible {
						t.Fatalf("trial %d: brute force infeasible, %s says %s", trial, name, res.Status)
					}
					continue
				}
				if res.Status != gbd.MasterOptimal {
					t.Fatalf("trial %d: status %s, want optimal", trial, res.Status)
				}
				hasOpt := !math.IsInf(mu, -1)
				if hasOpt && !approx(res.Mu, mu, 1e-6) {
					t.Fatalf("trial %d: μ = %g, brute force %g", trial, res.Mu, mu)
				}
				if hasOpt && !approx(res.Bound, mu, 1e-6) {
					t.Fatalf("trial %d: bound = %g, brute force %g", trial, res.Bound, mu)
				}
				if !gbd.SatisfiesFeasibilityCuts(cuts, res.Y) || ypb.Index(res.Y) < 0 {
					t.Fatalf("trial %d: y = %v is not feasible for the master", trial, res.Y)
				}
				if hasOpt && !approx(gbd.MaxOptimality(cuts, res.Y), mu, 1e-6) {
					t.Fatalf("trial %d: y attains %g, optimum %g", trial, gbd.MaxOptimality(cuts, res.Y), mu)
				}
			}
		})
	}
}

func TestMasterTimeLimitBoundIsValid(t *testing.T) {
	for name, mk := range masterBackends() {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 5))
			for trial := range 20 {
				ny := 12
				ypb, _ := gbd.EnumerateAdmissible(ny, nil, 0)
				cuts := randomCuts(rng, ny, 60, 0.1)
				m := mk()
				m.Reset(ny, nil, ypb)
				for k := range cuts {
					m.AddCut(&cuts[k])
				}
				start := ypb.Float(rng.IntN(ypb.Count()), make([]float64, ny))
				res, err := m.Solve(time.Millisecond, start)
				if errors.Is(err, cbc.ErrWorker) && name == "cbc-isolated" {
					// A worker not scheduled within its limit plus cbc.OverrunGrace (a loaded
					// machine) is killed: a failed solve, not a bound, and nothing to check.
					t.Logf("trial %d: %v", trial, err)
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				_, mu := gbdtest.BruteMaster(ypb, cuts)
				if res.Status == gbd.MasterInfeasible {
					if !math.IsInf(mu, 1) {
						t.Fatalf("trial %d: infeasible but brute force found %g", trial, mu)
					}
					continue
				}
				if res.Bound > mu+1e-6*(1+math.Abs(mu)) {
					t.Fatalf("trial %d: time-limited bound %g exceeds the optimum %g", trial, res.Bound, mu)
				}
				if res.Y != nil && res.Mu < mu-1e-6*(1+math.Abs(mu)) {
					t.Fatalf("trial %d: incumbent value %g below the optimum %g", trial, res.Mu, mu)
				}
			}
		})
	}
}

func TestMasterWithoutOptimalityCuts(t *testing.T) {
	for name, mk := range masterBackends() {
		t.Run(name, func(t *testing.T) {
			ypb, _ := gbd.EnumerateAdmissible(3, nil, 0)
			m := mk()
			m.Reset(3, nil, ypb)
			// Exclude every y with y0 = 0.
			m.AddCut(&gbd.Cut{Kind: gbd.FeasibilityCut, Coef: []float64{-1, 0, 0}, Const: 0.5})
			res, err := m.Solve(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != gbd.MasterOptimal || res.Y[0] != 1 || !math.IsInf(res.Bound, -1) {
				t.Errorf("got %+v, want y0 = 1 with an unbounded (−Inf) bound", res)
			}
			m.AddCut(&gbd.Cut{Kind: gbd.FeasibilityCut, Coef: []float64{1, 0, 0}, Const: -0.5})
			if res, _ := m.Solve(0, nil); res.Status != gbd.MasterInfeasible {
				t.Errorf("contradicting cuts: status %s, want infeasible", res.Status)
			}
		})
	}
}

// BenchmarkMaster compares the back-ends on a 12-binary master with 20 cuts, side by side.
func BenchmarkMaster(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	ny := 12
	var pure []gbd.PureRow
	for i := 0; i < ny; i += 3 {
		pure = append(pure, gbd.PureRow{Idx: []int{i, i + 1, i + 2}, Coef: []float64{1, 1, 1}, RHS: 2})
	}
	ypb, _ := gbd.EnumerateAdmissible(ny, pure, 0)
	cuts := randomCuts(rng, ny, 20, 0.2)
	for name, mk := range masterBackends() {
		b.Run(name, func(b *testing.B) {
			m := mk()
			for b.Loop() {
				m.Reset(ny, pure, ypb)
				for k := range cuts {
					m.AddCut(&cuts[k])
				}
				if _, err := m.Solve(0, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMasterHingesAgreeWithBruteForce: the back-ends that take a problem's hinges
// (gbd.HingeTaker: exact costs of one or two consecutive stages' binaries, such as start costs)
// against brute force over Y_pb, on staged sets with rows over three stages, cuts with and without
// the hinges and with and without stage tables, solved again after each batch of cuts (the staged
// master's pool, memo and one-pass search all meet the hinges).
func TestMasterHingesAgreeWithBruteForce(t *testing.T) {
	for name, mk := range masterBackends() {
		if _, ok := mk().(gbd.HingeTaker); !ok {
			continue
		}
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, 19))
			for trial := range knob.Size(30, 8) {
				units, S := 3, 3+rng.IntN(3)
				ny := units * S
				yi := func(u, s int) int { return s*units + u }
				stages := make([][]int, S)
				var pure []gbd.PureRow
				for s := range S {
					r := gbd.PureRow{RHS: 2}
					for u := range units {
						stages[s] = append(stages[s], yi(u, s))
						r.Idx, r.Coef = append(r.Idx, yi(u, s)), append(r.Coef, 1)
					}
					pure = append(pure, r)
					for u := 0; s >= 1 && s+1 < S && u < units; u++ { // a start runs two stages
						pure = append(pure, gbd.PureRow{Idx: []int{yi(u, s), yi(u, s-1), yi(u, s+1)}, Coef: []float64{1, -1, -1}})
					}
				}
				ypb, err := gbd.EnumerateAdmissible(ny, pure, 0)
				if err != nil {
					t.Fatal(err)
				}
				ypb.Stages = stages
				h := &gbd.Hinges{}
				for s := range S {
					for u := range units {
						if s > 0 { // a start: y[u,s] − y[u,s−1]
							h.Terms = append(h.Terms, gbd.Hinge{Weight: 0.5 + 3*rng.Float64(),
								Idx: []int{yi(u, s), yi(u, s-1)}, Coef: []float64{1, -1}})
						}
						if rng.IntN(3) == 0 { // anything over one stage or two
							o := rng.IntN(units)
							sb := max(0, s-rng.IntN(2))
							h.Terms = append(h.Terms, gbd.Hinge{Weight: 2 * rng.Float64(),
								Idx: []int{yi(u, s), yi(o, sb)}, Coef: []float64{4*rng.Float64() - 2, 4*rng.Float64() - 2}, Const: rng.Float64() - 0.5})
						}
					}
				}
				cuts := randomCuts(rng, ny, 8+rng.IntN(30), 0.15)
				hinged := 0
				for k := range cuts {
					c := &cuts[k]
					if rng.IntN(2) == 0 {
						c.Tables = &gbd.StageTables{Stages: stages, Excess: make([][]float64, S)}
						for s := range S {
							c.Tables.Excess[s] = make([]float64, 1<<units)
							for p := range c.Tables.Excess[s] {
								c.Tables.Excess[s][p] = 5 * rng.Float64()
							}
						}
					}
					if c.Kind == gbd.OptimalityCut && rng.IntN(5) > 0 {
						c.Hinges = h
						hinged++
					}
				}
				m := mk()
				if err := m.Reset(ny, pure, ypb); err != nil {
					t.Fatal(err)
				}
				if !m.(gbd.HingeTaker).TakeHinges(h) {
					t.Fatalf("trial %d: hinges of two consecutive stages refused", trial)
				}
				// Half the trials solve as Algorithm 2 does: with a proposal as the start, a time
				// limit and the engine's cutoff (the incumbent's UBD − ε), which the staged master's
				// pool and one-pass searches answer.
				agentLike := trial%2 == 1
				cutoff := math.Inf(1)
				for from := 0; from < len(cuts); {
					to := min(len(cuts), from+1+rng.IntN(6))
					for k := from; k < to; k++ {
						m.AddCut(&cuts[k])
					}
					from = to
					var start []float64
					limit := time.Duration(0)
					best, mu := gbdtest.BruteMaster(ypb, cuts[:to])
					if agentLike {
						start = ypb.Float(rng.IntN(ypb.Count()), make([]float64, ny))
						limit = time.Minute
						if c, ok := m.(gbd.Cutoff); ok && best >= 0 && !math.IsInf(mu, -1) {
							// An incumbent somewhat above the optimum, falling as GBD's does.
							cutoff = math.Min(cutoff, mu+3*rng.Float64())
							c.SetCutoff(cutoff)
						}
					}
					res, err := m.Solve(limit, start)
					if err != nil {
						t.Fatal(err)
					}
					if res.Status == gbd.MasterAboveCutoff {
						if best >= 0 && mu <= cutoff-1e-9*(1+math.Abs(mu)) {
							t.Fatalf("trial %d, %d cuts: above the cutoff %.12g (bound %.12g), brute force %.12g", trial, to, cutoff, res.Bound, mu)
						}
						continue
					}
					if best < 0 {
						if res.Status != gbd.MasterInfeasible {
							t.Fatalf("trial %d: brute force infeasible, status %s", trial, res.Status)
						}
						continue
					}
					if res.Status != gbd.MasterOptimal {
						t.Fatalf("trial %d, %d cuts: status %s, want optimal", trial, to, res.Status)
					}
					if math.IsInf(mu, -1) {
						continue
					}
					if !approx(res.Mu, mu, 1e-9) || !approx(res.Bound, mu, 1e-9) {
						t.Fatalf("trial %d, %d cuts (%d with hinges): μ = %.12g, bound %.12g, brute force %.12g", trial, to, hinged, res.Mu, res.Bound, mu)
					}
					if got := gbd.MaxOptimality(cuts[:to], res.Y); !approx(got, mu, 1e-9) {
						t.Fatalf("trial %d: y attains %.12g, optimum %.12g", trial, got, mu)
					}
				}
				// The same master reset for a solve without hinges (the next problem has none):
				// the cuts count without them.
				if err := m.Reset(ny, pure, ypb); err != nil {
					t.Fatal(err)
				}
				plain := make([]gbd.Cut, len(cuts))
				for k := range cuts {
					plain[k] = cuts[k]
					plain[k].Hinges = nil
					m.AddCut(&plain[k])
				}
				res, err := m.Solve(0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if best, mu := gbdtest.BruteMaster(ypb, plain); best >= 0 && !math.IsInf(mu, -1) && !approx(res.Mu, mu, 1e-9) {
					t.Fatalf("trial %d, reset without hinges: μ = %.12g, brute force %.12g", trial, res.Mu, mu)
				}
			}
		})
	}
}
