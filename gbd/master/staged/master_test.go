package staged

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/fakeclock"
)

// The staged master, searching the blocks of a pump station's Y_pb, finds the enum master's
// optimum after every cut, with feasibility cuts that exclude most assignments and eventually all
// of them (the time limit runs in the shared suite, gbd/master/suite_test.go). Some solves are
// answered from the solution pool of an earlier one, and must still be exact.
func TestMasterMatchesEnum(t *testing.T) {
	// {4, 5, true}: the block rows only, so every stage is Local and the completion tables take
	// their one-row path; the last two search the stages first to last (Forward).
	for _, sz := range []struct {
		np, nb  int
		local   bool
		forward bool
	}{{3, 4, false, false}, {4, 5, false, false}, {4, 5, true, false}, {4, 5, false, false}, {5, 6, false, false}, {4, 5, false, true}, {5, 6, false, true}} {
		// The stations of 20 binaries or more with every row search on three goroutines (Workers).
		workers := 1
		if sz.np*sz.nb >= 20 && !sz.local {
			workers = 3
		}
		ny := sz.np * sz.nb
		ypb, imp := gbdtest.PumpSet(t, sz.np, sz.nb, true), gbdtest.PumpSet(t, sz.np, sz.nb, false)
		if sz.local {
			var err error
			if ypb, err = gbd.EnumerateAdmissible(ny, imp.Rows[:sz.nb], 1<<20); err != nil {
				t.Fatal(err)
			}
			if imp, err = gbd.ImplicitAdmissible(ny, imp.Rows[:sz.nb]); err != nil {
				t.Fatal(err)
			}
			ypb.Stages, imp.Stages = gbdtest.PumpSet(t, sz.np, sz.nb, false).Stages, gbdtest.PumpSet(t, sz.np, sz.nb, false).Stages
		}
		rows := imp.Rows
		rng := rand.New(rand.NewPCG(uint64(ny), 3))
		scan, staged := &enum.Master{}, &Master{Workers: workers, Forward: sz.forward}
		fromPool, split := 0, 0
		if err := scan.Reset(ny, rows, ypb); err != nil {
			t.Fatal(err)
		}
		if err := staged.Reset(ny, rows, imp); err != nil {
			t.Fatal(err)
		}
		for k := range 40 {
			c := gbdtest.RandomCut(rng, ny, k%5 == 4, 0.15)
			scan.AddCut(&c)
			staged.AddCut(&c)
			want, _ := scan.Solve(0, nil)
			got, err := staged.Solve(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want.Status {
				t.Fatalf("%d binaries, cut %d: staged %v, enum %v", ny, k, got.Status, want.Status)
			}
			if want.Status != gbd.MasterOptimal {
				break // every assignment excluded
			}
			if !ypb.Contains(got.Y) || math.Abs(got.Mu-want.Mu) > 1e-9*(1+math.Abs(want.Mu)) || got.Bound != got.Mu {
				t.Fatalf("%d binaries, cut %d: staged μ %v at %v (bound %v), enum μ %v", ny, k, got.Mu, got.Y, got.Bound, want.Mu)
			}
			if staged.Nodes == 0 {
				fromPool++
			}
			if len(staged.items) > 0 {
				split++
			}
		}
		t.Logf("%d binaries: %d solves answered from the pool", ny, fromPool)
		if fromPool == 0 {
			t.Errorf("%d binaries: no solve was answered from the pool", ny)
		}
		if (workers > 1) != (split > 0) {
			t.Errorf("%d binaries, %d workers: %d solves split their search", ny, workers, split)
		}
	}
}

// With a cutoff (Cutoff: the engine's UBD − ε), the staged master collects its pool up to it, so the
// solves after that are answered from the pool — exactly, as the enum master shows — for as long as
// the optimum stays at or below the cutoff, where without one the pool is spent after a few
// solves and searched for again. Once the optimum has passed the cutoff, the spent pool proves it
// without a search (MasterAboveCutoff, a bound between the cutoff and the optimum), which is what
// ends a GBD solve.
func TestMasterCutoffPool(t *testing.T) {
	const np, nb = 4, 5
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	rng := rand.New(rand.NewPCG(4, 7))
	scan, plain, cut := &enum.Master{}, &Master{}, &Master{}
	for _, m := range []gbd.Master{scan, plain, cut} {
		if err := m.Reset(ny, imp.Rows, ypb); err != nil {
			t.Fatal(err)
		}
	}
	cuts := make([]gbd.Cut, 60)
	for k := range cuts {
		cuts[k] = gbdtest.RandomCut(rng, ny, k%7 == 6, 0.3)
	}
	// The cutoff: the optimum after 35 cuts, as if GBD had that incumbent from the third solve on.
	ref := &enum.Master{}
	if err := ref.Reset(ny, imp.Rows, ypb); err != nil {
		t.Fatal(err)
	}
	for k := range 35 {
		ref.AddCut(&cuts[k])
	}
	at35, _ := ref.Solve(0, nil)
	searches := map[*Master]int{}
	cutoff := math.Inf(1)
	beyond, above := 0, 0
	for k := range cuts {
		c := &cuts[k]
		for _, m := range []gbd.Master{scan, plain, cut} {
			m.AddCut(c)
		}
		want, _ := scan.Solve(0, nil)
		if want.Status != gbd.MasterOptimal {
			t.Fatalf("cut %d: enum %v", k, want.Status)
		}
		if k == 2 {
			cutoff = at35.Mu
			cut.SetCutoff(cutoff)
		}
		if want.Mu > cutoff {
			beyond++
		}
		for _, m := range []*Master{plain, cut} {
			got, err := m.Solve(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == gbd.MasterAboveCutoff {
				if m != cut || want.Mu <= m.cutoff || got.Bound < m.cutoff || got.Bound > want.Mu || got.Y != nil || m.Nodes > 0 {
					t.Fatalf("cut %d, cutoff %v: above the cutoff with bound %v after %d nodes, enum μ %v", k, m.cutoff, got.Bound, m.Nodes, want.Mu)
				}
				above++
				continue
			}
			if got.Status != gbd.MasterOptimal || !ypb.Contains(got.Y) || math.Abs(got.Mu-want.Mu) > 1e-9*(1+math.Abs(want.Mu)) {
				t.Fatalf("cut %d, cutoff %v: staged %v μ %v, enum μ %v", k, m.cutoff, got.Status, got.Mu, want.Mu)
			}
			if m.Nodes > 0 {
				searches[m]++
			}
			if m.poolOK && m.poolT > m.cutoff {
				t.Fatalf("cut %d: pool collected up to %v, beyond the cutoff %v", k, m.poolT, m.cutoff)
			}
		}
	}
	t.Logf("searches: %d without a cutoff, %d with one (the optimum passed it in %d of 60 solves, %d answered above it)", searches[plain], searches[cut], beyond, above)
	if above == 0 {
		t.Errorf("no solve past the cutoff was answered above it")
	}
	if beyond == 0 || beyond > 40 {
		t.Fatalf("the optimum passed the cutoff in %d solves: the test should see both sides", beyond)
	}
	// Before the optimum passes the cutoff: one search (with the collection) after SetCutoff; after
	// it, none.
	if searches[cut] >= searches[plain] {
		t.Errorf("%d searches with a cutoff, %d without: the pool up to the cutoff saved none", searches[cut], searches[plain])
	}
}

// The pool never reaches past the cutoff, and an optimum above the cutoff (which ends the GBD
// solve) collects none: both would be searches for assignments no later master is asked for. The
// master then answers MasterAboveCutoff at the cutoff, in no more nodes than finding the optimum
// takes.
func TestMasterPoolStopsAtCutoff(t *testing.T) {
	const np, nb = 4, 5
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	rng := rand.New(rand.NewPCG(12, 3))
	cuts := make([]gbd.Cut, 30)
	for k := range cuts {
		cuts[k] = gbdtest.RandomCut(rng, ny, false, 0)
	}
	solve := func(cutoff float64, maxPool int) (*Master, gbd.MasterResult) {
		m := &Master{MaxPool: maxPool}
		if err := m.Reset(ny, imp.Rows, ypb); err != nil {
			t.Fatal(err)
		}
		for k := range cuts {
			m.AddCut(&cuts[k])
		}
		m.SetCutoff(cutoff)
		r, err := m.Solve(0, nil)
		if err != nil {
			t.Fatalf("cutoff %v: %v", cutoff, err)
		}
		return m, r
	}
	plain, opt := solve(math.Inf(1), 0)
	if !plain.poolOK || plain.poolT <= opt.Mu {
		t.Fatalf("no pool above the optimum %v without a cutoff (pool %v up to %v)", opt.Mu, plain.poolOK, plain.poolT)
	}
	near := opt.Mu + (plain.poolT-opt.Mu)/4 // inside the usual δ
	m, r := solve(near, 0)
	if r.Mu != opt.Mu || !m.poolOK || m.poolT != near {
		t.Errorf("cutoff %v inside δ: optimum %v (want %v), pool %v up to %v (want the cutoff)", near, r.Mu, opt.Mu, m.poolOK, m.poolT)
	}
	below := opt.Mu - 1e-6
	m, r = solve(below, 0)
	noPool, _ := solve(below, -1)
	if r.Status != gbd.MasterAboveCutoff || r.Bound != below || m.poolOK || m.Nodes > noPool.Nodes {
		t.Errorf("optimum above the cutoff: %v bound %v (want above_cutoff, %v), pool %v, %d nodes (%d for the optimum without collecting)", r.Status, r.Bound, below, m.poolOK, m.Nodes, noPool.Nodes)
	}
}

// With an incumbent and a cutoff, a solve searches and collects in one pass (searchCollect). Along
// 40 cuts and cutoffs on both sides of the optimum its answers are the enum master's: the optimum
// when it is at or below the cutoff, MasterAboveCutoff at the cutoff (or the optimum) when it is
// above; the same
// with a pool of 3 that the pass must drop to finish as a plain search; and a pass the time limit
// stops still brackets the optimum.
func TestMasterSearchCollect(t *testing.T) {
	const np, nb = 5, 6
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	rng := rand.New(rand.NewPCG(21, 8))
	scan := &enum.Master{}
	if err := scan.Reset(ny, imp.Rows, ypb); err != nil {
		t.Fatal(err)
	}
	type variant struct {
		name string
		m    *Master
	}
	vs := []variant{
		{"pool", &Master{}},
		{"pool of 3", &Master{MaxPool: 3}},
		{"stopped", &Master{Clock: fakeclock.Ticking(time.Unix(0, 0), 50*time.Microsecond)}},
		{"stopped at once", &Master{Clock: fakeclock.Ticking(time.Unix(0, 0), time.Millisecond)}},
		// On two goroutines: the same answers; stopped by the real clock (two workers reading a
		// ticking one would not stop deterministically either).
		{"parallel pool", &Master{Workers: 2}},
		{"parallel pool of 3", &Master{Workers: 2, MaxPool: 3}},
		{"parallel stopped", &Master{Workers: 2}},
	}
	for _, v := range vs {
		if err := v.m.Reset(ny, imp.Rows, ypb); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{}
	for k := range 40 {
		c := gbdtest.RandomCut(rng, ny, k%9 == 8, 0)
		scan.AddCut(&c)
		want, err := scan.Solve(0, nil)
		if err != nil || want.Status != gbd.MasterOptimal {
			t.Fatalf("cut %d: enum %v %v", k, want.Status, err)
		}
		if k < 3 {
			for _, v := range vs {
				v.m.AddCut(&c)
				if _, err := v.m.Solve(0, nil); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		tol := 1e-9 * (1 + math.Abs(want.Mu))
		cutoff := want.Mu + 0.5*rng.NormFloat64()
		for _, v := range vs {
			v.m.AddCut(&c)
			v.m.SetCutoff(cutoff)
			limit := time.Duration(0)
			if v.name == "parallel stopped" {
				limit = 30 * time.Microsecond // the real clock: some solves stop, some finish
			}
			if strings.HasPrefix(v.name, "stopped") {
				limit = time.Millisecond
				if k%2 == 1 {
					// Just below the optimum: the pass prunes the optimum's leaf and, stopped,
					// must not claim a bound above the cutoff.
					v.m.SetCutoff(want.Mu - 1e-3)
				}
			}
			got, err := v.m.Solve(limit, nil)
			if err != nil {
				t.Fatal(err)
			}
			cutoff := v.m.cutoff
			counts[v.name+" "+got.Status.String()]++
			switch {
			case got.Status == gbd.MasterStopped:
				if limit == 0 || got.Bound > want.Mu+tol || got.Mu < want.Mu-tol {
					t.Fatalf("cut %d, %s: stopped with bound %v, μ %v; optimum %v", k, v.name, got.Bound, got.Mu, want.Mu)
				}
			case want.Mu <= cutoff:
				if got.Status != gbd.MasterOptimal || math.Abs(got.Mu-want.Mu) > tol || !ypb.Contains(got.Y) {
					t.Fatalf("cut %d, %s, cutoff %v: %v μ %v, optimum %v at or below it", k, v.name, cutoff, got.Status, got.Mu, want.Mu)
				}
			case got.Status == gbd.MasterOptimal: // the optimum above the cutoff is a right answer too
				if math.Abs(got.Mu-want.Mu) > tol || !ypb.Contains(got.Y) {
					t.Fatalf("cut %d, %s, cutoff %v: optimal μ %v, optimum %v", k, v.name, cutoff, got.Mu, want.Mu)
				}
			default:
				if got.Status != gbd.MasterAboveCutoff || got.Bound < cutoff || got.Bound > want.Mu {
					t.Fatalf("cut %d, %s, cutoff %v: %v bound %v, optimum %v above it", k, v.name, cutoff, got.Status, got.Bound, want.Mu)
				}
			}
		}
		// A fresh cutoff for every solve: the pools are no proof for the next one.
		for _, v := range vs {
			v.m.SetCutoff(math.Inf(1))
			v.m.poolOK = false
		}
	}
	t.Logf("answers: %v", counts)
	for _, want := range []string{"pool optimal", "pool above_cutoff", "pool of 3 optimal", "pool of 3 above_cutoff", "stopped stopped", "parallel pool optimal", "parallel pool above_cutoff"} {
		if counts[want] == 0 {
			t.Errorf("no answer %q", want)
		}
	}
}

// The time limit bounds the whole solve, the subgradient ascent that prepares the Lagrangian bound
// included: with ~60 cuts it is most of a small solve (7–10 ms of DPs at 500 cuts, more than T_min).
// On a clock whose every reading is one limit later, a limited solve stops the ascent after its
// first step and still brackets the optimum; an unlimited one runs it out.
func TestMasterAscentKeepsTheLimit(t *testing.T) {
	ny := 30
	imp := gbdtest.PumpSet(t, 5, 6, false)
	rng := rand.New(rand.NewPCG(9, 10))
	var cuts []gbd.Cut
	for range 60 {
		cuts = append(cuts, gbdtest.RandomCut(rng, ny, false, 0))
	}
	solve := func(limit time.Duration, clock gbd.Clock) (*Master, gbd.MasterResult) {
		m := &Master{MaxPool: -1, Clock: clock}
		if err := m.Reset(ny, imp.Rows, imp); err != nil {
			t.Fatal(err)
		}
		for k := range cuts {
			m.AddCut(&cuts[k])
		}
		r, err := m.Solve(limit, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m, r
	}
	exact, want := solve(0, nil)
	limited, got := solve(time.Millisecond, fakeclock.Ticking(time.Unix(0, 0), time.Millisecond))
	if exact.Ascent < 2 || limited.Ascent != 1 {
		t.Errorf("ascent steps: %d without a limit, %d with an expired one (want several, and 1)", exact.Ascent, limited.Ascent)
	}
	tol := 1e-9 * (1 + math.Abs(want.Mu))
	if got.Status != gbd.MasterStopped || got.Bound > want.Mu+tol || got.Mu < want.Mu-tol {
		t.Errorf("limited solve: %v, bound %v, μ %v; optimum %v", got.Status, got.Bound, got.Mu, want.Mu)
	}
}

// A staged search stopped by its time limit deep in the tree reports an incumbent and a bound that
// bracket the optimum (the open nodes' least Lagrangian bound, not above the optimum).
func TestMasterStoppedBound(t *testing.T) {
	ny := 30
	imp := gbdtest.PumpSet(t, 5, 6, false)
	rows := imp.Rows
	rng := rand.New(rand.NewPCG(9, 9))
	var cuts []gbd.Cut
	for range 60 {
		cuts = append(cuts, gbdtest.RandomCut(rng, ny, false, 0))
	}
	exact := &Master{MaxPool: -1}
	if err := exact.Reset(ny, rows, imp); err != nil {
		t.Fatal(err)
	}
	for k := range cuts {
		exact.AddCut(&cuts[k])
	}
	want, err := exact.Solve(0, nil)
	if err != nil || want.Status != gbd.MasterOptimal {
		t.Fatalf("exact solve: %v %v", want.Status, err)
	}
	stopped := 0
	for _, tick := range []time.Duration{time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond} {
		m := &Master{MaxPool: -1, Clock: fakeclock.Ticking(time.Unix(0, 0), tick)}
		if err := m.Reset(ny, rows, imp); err != nil {
			t.Fatal(err)
		}
		for k := range cuts {
			m.AddCut(&cuts[k])
		}
		got, err := m.Solve(time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-9 * (1 + math.Abs(want.Mu))
		switch got.Status {
		case gbd.MasterStopped:
			stopped++
			if got.Bound > want.Mu+tol || got.Mu < want.Mu-tol || got.Bound > got.Mu+tol {
				t.Errorf("tick %v: bound %v, μ %v, optimum %v", tick, got.Bound, got.Mu, want.Mu)
			}
			t.Logf("tick %v: stopped after %d nodes, bound %.4f ≤ optimum %.4f ≤ μ %.4f (root %.4f)", tick, m.Nodes, got.Bound, want.Mu, got.Mu, m.RootBound)
		case gbd.MasterOptimal:
			if math.Abs(got.Mu-want.Mu) > tol {
				t.Errorf("tick %v: optimal μ %v, want %v", tick, got.Mu, want.Mu)
			}
		default:
			t.Errorf("tick %v: status %v", tick, got.Status)
		}
	}
	if stopped == 0 {
		t.Error("no solve was stopped by its limit")
	}
}

// Stage cuts (gbd.StageTables) add to the stage values whichever way the search takes the stages:
// first to last (Forward) or last to first (the default), the staged master's optimum is the
// brute-force one over every admissible assignment with Cut.Eval, tables included, after every
// cut; and tables over other stages than Y_pb's are left out, not misread.
func TestMasterStageTables(t *testing.T) {
	const np, nb = 3, 5
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	for _, forward := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(11, 5))
		m := &Master{Forward: forward}
		if err := m.Reset(ny, imp.Rows, imp); err != nil {
			t.Fatal(err)
		}
		var cuts []gbd.Cut
		for k := range 25 {
			cuts = append(cuts, stageTableCut(rng, imp, k%6 == 5, 0.15, 4))
			m.AddCut(&cuts[k])
			got, err := m.Solve(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			best, mu := gbdtest.BruteMaster(ypb, cuts)
			if best < 0 {
				if got.Status != gbd.MasterInfeasible {
					t.Fatalf("forward %v, cut %d: %v where every assignment is excluded", forward, k, got.Status)
				}
				break
			}
			if got.Status != gbd.MasterOptimal || math.Abs(got.Mu-mu) > 1e-9*(1+math.Abs(mu)) || math.Abs(gbd.MaxOptimality(cuts, got.Y)-mu) > 1e-9*(1+math.Abs(mu)) {
				t.Fatalf("forward %v, cut %d: %v μ %v, brute force %v", forward, k, got.Status, got.Mu, mu)
			}
		}
	}
	// Tables over a stage split Y_pb does not have are not read as Y_pb's.
	m := &Master{}
	if err := m.Reset(ny, imp.Rows, imp); err != nil {
		t.Fatal(err)
	}
	other := slices.Clone(imp.Stages)
	other[0], other[1] = other[1], other[0]
	if _, ok := m.tableStages(&gbd.StageTables{Stages: other, Excess: make([][]float64, nb)}); ok {
		t.Error("tables over reordered stages were taken")
	}
	if _, ok := m.tableStages(&gbd.StageTables{Stages: imp.Stages, Excess: make([][]float64, nb)}); !ok {
		t.Error("tables over Y_pb's stages were not taken")
	}
}

// The memo of failed subtrees (memo.go) prunes only what holds no better leaf: on a station of
// seven blocks, after each of 40 cuts with stage tables (every fifth a feasibility cut), the exact
// master matches brute force in both search orders, on one worker and on two, with no pool and
// with the engine's cutoff (SetCutoff) making it answer from collections up to the cutoff or
// above it — and nogoods did prune (the test would not see a memo that never fires).
func TestMasterMemoMatchesBruteForce(t *testing.T) {
	const np, nb = 3, 7
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	hits := 0
	for _, forward := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			for _, withCutoff := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(7, 3))
				m := &Master{Forward: forward, Workers: workers, Budget: -1}
				if !withCutoff {
					m.MaxPool = -1
				}
				if err := m.Reset(ny, imp.Rows, imp); err != nil {
					t.Fatal(err)
				}
				var cuts []gbd.Cut
				prev := math.Inf(1)
				for k := range 40 {
					cuts = append(cuts, stageTableCut(rng, imp, k%5 == 4, 0.1, 3))
					m.AddCut(&cuts[k])
					cutoff := math.Inf(1)
					if withCutoff && !math.IsInf(prev, 0) {
						cutoff = prev + 2*rng.Float64() // what UBD − ε might be
						m.SetCutoff(cutoff)
					}
					got, err := m.Solve(0, nil)
					if err != nil {
						t.Fatal(err)
					}
					hits += m.MemoHits
					best, mu := gbdtest.BruteMaster(ypb, cuts)
					where := func() string {
						return fmt.Sprintf("forward %v, %d workers, cutoff %v, cut %d", forward, workers, withCutoff, k)
					}
					if best < 0 {
						if got.Status != gbd.MasterInfeasible {
							t.Fatalf("%s: %v where every assignment is excluded", where(), got.Status)
						}
						break
					}
					tol := 1e-9 * (1 + math.Abs(mu))
					switch {
					case got.Status == gbd.MasterAboveCutoff:
						if mu < cutoff-tol || got.Bound > mu+tol {
							t.Fatalf("%s: above the cutoff %v (bound %v) where brute force has %v", where(), cutoff, got.Bound, mu)
						}
					case got.Status != gbd.MasterOptimal || math.Abs(got.Mu-mu) > tol || math.Abs(gbd.MaxOptimality(cuts, got.Y)-mu) > tol:
						t.Fatalf("%s: %v μ %v, brute force %v", where(), got.Status, got.Mu, mu)
					}
					if !math.IsInf(mu, 0) && !math.IsNaN(mu) {
						prev = mu
					}
				}
			}
		}
	}
	if hits == 0 {
		t.Error("no node was pruned by a nogood")
	}
	t.Logf("%d nodes pruned by nogoods", hits)
}

// stageTableCut is gbdtest.RandomCut over ypb's binaries, an optimality cut carrying stage tables
// over ypb's stages with entries drawn from [0, scale).
func stageTableCut(rng *rand.Rand, ypb *gbd.Admissible, feasibility bool, lo, scale float64) gbd.Cut {
	c := gbdtest.RandomCut(rng, ypb.NY, feasibility, lo)
	if c.Kind == gbd.OptimalityCut {
		tab := &gbd.StageTables{Stages: ypb.Stages, Excess: make([][]float64, len(ypb.Stages))}
		for s, st := range ypb.Stages {
			tab.Excess[s] = make([]float64, 1<<len(st))
			for p := range tab.Excess[s] {
				tab.Excess[s][p] = scale * rng.Float64()
			}
		}
		c.Tables = tab
	}
	return c
}

// TestMasterPoolAfterAStoppedCollection: a collection of the pool that does not end whole — the
// time limit or its node budget stops it, as when an exact step that found its optimum and δ pool
// in one pass (searchSlack) goes on to collect up to the engine's cutoff — leaves no pool, and the
// next solve must search. (It did not: the emptied pool still counted as valid and "spent" at its
// threshold, so the next solve took that threshold as a lower bound, or answered
// MasterAboveCutoff with a bound above the optimum — an invalid certificate, met under Algorithm
// 2's short master limits.)
func TestMasterPoolAfterAStoppedCollection(t *testing.T) {
	const np, nb = 4, 5
	ny := np * nb
	ypb, imp := gbdtest.PumpSet(t, np, nb, true), gbdtest.PumpSet(t, np, nb, false)
	rng := rand.New(rand.NewPCG(9, 41))
	scan := &enum.Master{}
	m := &Master{}
	for _, r := range []gbd.Master{scan, m} {
		if err := r.Reset(ny, imp.Rows, ypb); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 30 {
		c := gbdtest.RandomCut(rng, ny, k%9 == 8, 0)
		scan.AddCut(&c)
		m.AddCut(&c)
		want, _ := scan.Solve(0, nil)
		got, err := m.Solve(0, nil)
		if err != nil || got.Status != gbd.MasterOptimal || math.Abs(got.Mu-want.Mu) > 1e-9*(1+math.Abs(want.Mu)) {
			t.Fatalf("cut %d: %v μ %v (%v), optimum %v", k, got.Status, got.Mu, err, want.Mu)
		}
		if k%3 != 2 || !m.poolOK {
			continue
		}
		// A collection up to far above the optimum, stopped by its node budget at once.
		if m.gather(want.Mu+1e3, 1) {
			t.Fatalf("cut %d: a collection of one node ended whole", k)
		}
		if m.poolOK {
			t.Fatalf("cut %d: the pool a stopped collection emptied (%d entries) still counts as valid", k, len(m.poolMu))
		}
	}
}
