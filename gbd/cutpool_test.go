package gbd

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"gbdmpc/internal/fakeclock"
)

// TestCutPoolBound: the pool keeps the most recent Max cuts, oldest first, with copies of their
// multipliers.
func TestCutPoolBound(t *testing.T) {
	cp := NewCutPool(5)
	if cp.Max() != 5 || NewCutPool(0).Max() != DefaultPoolSize {
		t.Fatalf("bounds %d and %d, want 5 and %d", cp.Max(), NewCutPool(0).Max(), DefaultPoolSize)
	}
	mu := []float64{1}
	for i := range 12 {
		mu[0] = float64(i)
		cp.Add(PooledCut{Kind: CutKind(i % 2), Duals: CutDuals{Mu: mu, Lam: []float64{}}, Step: i, Iter: i})
		if cp.Len() != min(i+1, 5) {
			t.Fatalf("after %d adds the pool holds %d cuts", i+1, cp.Len())
		}
	}
	for k, e := range cp.Entries() {
		if want := 7 + k; e.Step != want || e.Duals.Mu[0] != float64(want) || e.Kind != CutKind(want%2) {
			t.Errorf("entry %d: step %d μ %v kind %v, want step %d", k, e.Step, e.Duals.Mu, e.Kind, want)
		}
	}
	cp.Reset()
	if cp.Len() != 0 {
		t.Errorf("Reset left %d cuts", cp.Len())
	}
}

// TestAddResultPoolsCutsWithDuals: only cuts with multipliers (made by the solve's own
// subproblems) enter the pool, with their kind and iteration.
func TestAddResultPoolsCutsWithDuals(t *testing.T) {
	d := &CutDuals{Mu: []float64{2}, Lam: []float64{}}
	r := &Result{
		Cuts:  []Cut{{Kind: OptimalityCut, Iter: -1, Carried: true}, {Kind: FeasibilityCut, Iter: 0}, {Kind: OptimalityCut, Iter: 1}},
		Duals: []*CutDuals{nil, nil, d},
	}
	cp := NewCutPool(0)
	if n := cp.AddResult(3, r); n != 1 || cp.Len() != 1 {
		t.Fatalf("pooled %d (len %d), want 1", n, cp.Len())
	}
	e := cp.Entries()[0]
	if e.Kind != OptimalityCut || e.Step != 3 || e.Iter != 1 || e.Duals.Mu[0] != 2 {
		t.Errorf("pooled %+v", e)
	}
	d.Mu[0] = 5
	if cp.Entries()[0].Duals.Mu[0] != 2 {
		t.Error("the pool shares the result's multipliers")
	}
}

// TestCarryReevaluates: Carry gives, newest first, exactly Lagrangian.Cut of the aligned
// multipliers, whatever the number of workers; the aligner sees each cut's age and may return
// several alignments or none.
func TestCarryReevaluates(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	p := randomSeparable(rng, 4, 3)
	cp := NewCutPool(0)
	for i := range 30 {
		cp.Add(PooledCut{Kind: CutKind(i % 2), Duals: randomDuals(rng, p), Step: i / 3})
	}
	var shifts []int
	align := func(d CutDuals, k int) []CutDuals {
		shifts = append(shifts, k)
		switch {
		case k == 9: // the oldest: dropped
			return nil
		case k == 0: // the newest: carried twice, as stored and scaled (any μ ≥ 0 is valid)
			s := d.Clone()
			for i := range s.Mu {
				s.Mu[i] *= 2
			}
			return []CutDuals{d, s}
		}
		return []CutDuals{d}
	}
	lag, err := NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	var first []Cut
	for _, workers := range []int{1, 3, 8} {
		shifts = shifts[:0]
		cuts, st, err := cp.Carry(p, 9, CarryOptions{Align: align, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if st.Pooled != 30 || st.Misaligned != 3 || st.Candidates != 30 || st.Carried+st.Dominated != 30 || st.Carried != len(cuts) {
			t.Errorf("workers %d: stats %+v", workers, st)
		}
		if shifts[0] != 0 || shifts[len(shifts)-1] != 9 {
			t.Errorf("aligner saw shifts %v, want newest (0) first and oldest (9) last", shifts)
		}
		for _, c := range cuts {
			if !c.Carried || c.Iter != -1 {
				t.Errorf("carried cut not marked: %+v", c)
			}
		}
		if first == nil {
			first = cuts
			// Without dominance pruning the cuts are the re-evaluations in order; check a few.
			want, err := lag.Cut(cp.Entries()[29].Kind, cp.Entries()[29].Duals)
			if err != nil {
				t.Fatal(err)
			}
			if st.Dominated == 0 && !reflect.DeepEqual(cuts[0], want) {
				t.Errorf("first carried cut %+v, want the newest re-evaluated %+v", cuts[0], want)
			}
		} else if !reflect.DeepEqual(cuts, first) {
			t.Errorf("workers %d changed the carried cuts", workers)
		}
	}
}

// TestDropDominated: a cut at or below another of its kind everywhere on {0,1}^m goes; cuts that
// cross stay, and of equal cuts the first stays.
func TestDropDominated(t *testing.T) {
	cuts := []Cut{
		{Kind: OptimalityCut, Coef: []float64{1, -1}, Const: 0},    // 0: kept
		{Kind: OptimalityCut, Coef: []float64{1, -2}, Const: -0.5}, // 1: below 0 everywhere
		{Kind: OptimalityCut, Coef: []float64{-1, 1}, Const: 0.5},  // 2: crosses 0
		{Kind: FeasibilityCut, Coef: []float64{1, -1}, Const: -1},  // 3: other kind than 0: kept
		{Kind: OptimalityCut, Coef: []float64{1, -1}, Const: 0},    // 4: equal to 0: dropped
		{Kind: FeasibilityCut, Coef: []float64{0, -1}, Const: -1},  // 5: below 3 (y0 = 0 ties)
	}
	keep, n := dropDominated(cuts)
	if n != 3 || len(keep) != 3 {
		t.Fatalf("dropped %d, kept %d: %+v", n, len(keep), keep)
	}
	for k, want := range []int{0, 2, 3} {
		if !reflect.DeepEqual(keep[k], cuts[want]) {
			t.Errorf("kept[%d] = %+v, want cut %d", k, keep[k], want)
		}
	}
	// Brute force: the max over kept cuts equals the max over all at every binary point.
	for y0 := range 2 {
		for y1 := range 2 {
			y := []float64{float64(y0), float64(y1)}
			for _, kind := range []CutKind{OptimalityCut, FeasibilityCut} {
				all, kept := math.Inf(-1), math.Inf(-1)
				for i := range cuts {
					if cuts[i].Kind == kind {
						all = math.Max(all, cuts[i].Eval(y))
					}
				}
				for i := range keep {
					if keep[i].Kind == kind {
						kept = math.Max(kept, keep[i].Eval(y))
					}
				}
				if all != kept {
					t.Errorf("y=%v %v: max %g over all cuts, %g over kept", y, kind, all, kept)
				}
			}
		}
	}
}

// TestDropDominatedMatchesAllPairs: on random pools with many duplicates and near-ties, the
// sorted scan drops exactly the cuts the plain all-pairs rule drops, in the same order.
func TestDropDominatedMatchesAllPairs(t *testing.T) {
	below := func(a, b *Cut) bool {
		s := a.Const - b.Const
		for k, v := range a.Coef {
			s += math.Max(0, v-b.Coef[k])
		}
		return s <= 0
	}
	rng := rand.New(rand.NewPCG(5, 8))
	for trial := range 200 {
		m, n := 1+rng.IntN(6), 1+rng.IntN(60)
		cuts := make([]Cut, n)
		for i := range cuts {
			if i > 0 && rng.IntN(4) == 0 { // a copy, or a copy moved down a little
				cuts[i] = cuts[rng.IntN(i)]
				cuts[i].Coef = append([]float64(nil), cuts[i].Coef...)
				cuts[i].Const -= float64(rng.IntN(2)) * 0.25
				continue
			}
			c := Cut{Kind: CutKind(rng.IntN(2)), Coef: make([]float64, m), Const: float64(rng.IntN(5) - 2)}
			for k := range c.Coef {
				c.Coef[k] = float64(rng.IntN(5)-2) / 2
			}
			cuts[i] = c
		}
		var want []Cut
		for i := range cuts {
			drop := false
			for j := range cuts {
				if i != j && cuts[i].Kind == cuts[j].Kind && below(&cuts[i], &cuts[j]) && (j < i || !below(&cuts[j], &cuts[i])) {
					drop = true
					break
				}
			}
			if !drop {
				want = append(want, cuts[i])
			}
		}
		got, dropped := dropDominated(append([]Cut(nil), cuts...))
		if dropped != n-len(want) || !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: dropped %d, kept %v; all-pairs keeps %v", trial, dropped, got, want)
		}
	}
}

// TestCarryStopsAtItsDeadline: with CarryOptions.Deadline, no cut is started at or after it (one
// clock reading per cut here, one before any work): the cuts done by then are returned, newest
// first, and the rest are counted as timed out. A deadline already passed does no work at all.
func TestCarryStopsAtItsDeadline(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	p := randomSeparable(rng, 4, 3)
	cp := NewCutPool(0)
	for i := range 30 {
		cp.Add(PooledCut{Kind: CutKind(i % 2), Duals: randomDuals(rng, p), Step: i})
	}
	lag, err := NewLagrangian(p)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1_700_000_000, 0)
	clock := fakeclock.Ticking(start, time.Millisecond)
	// Readings at 1 ms (before any work), then 2, 3, 4, 5 ms before cuts 1–4; 6 ms is past.
	cuts, st, err := cp.Carry(p, 30, CarryOptions{Workers: 1, Clock: clock, Deadline: start.Add(5*time.Millisecond + time.Millisecond/2)})
	if err != nil {
		t.Fatal(err)
	}
	if st.Candidates != 30 || st.TimedOut != 26 || st.Carried+st.Dominated != 4 || st.Carried != len(cuts) {
		t.Fatalf("stats %+v, want 4 cuts re-evaluated and 26 timed out", st)
	}
	var want []Cut
	for i := 29; i >= 26; i-- {
		c, err := lag.Cut(cp.Entries()[i].Kind, cp.Entries()[i].Duals)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	if want, _ = dropDominated(want); !reflect.DeepEqual(cuts, want) {
		t.Errorf("carried %+v, want the 4 newest re-evaluated %+v", cuts, want)
	}

	aligned := 0
	align := func(d CutDuals, _ int) []CutDuals { aligned++; return []CutDuals{d} }
	cuts, st, err = cp.Carry(p, 30, CarryOptions{Align: align, Clock: clock, Deadline: clock.Now()})
	if err != nil || len(cuts) != 0 || aligned != 0 || st.TimedOut != 30 || st.Pooled != 30 {
		t.Errorf("past deadline: %d cuts, %d alignments, stats %+v, err %v; want no work", len(cuts), aligned, st, err)
	}
}

// TestCarryEvictsIdleEntries: an entry whose every re-evaluation is dominated gains an idle count
// per carry and leaves the pool at EvictIdle; an entry whose cut survives is reset to 0 and stays;
// an entry the deadline kept from being re-evaluated is not judged.
func TestCarryEvictsIdleEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	p := randomSeparable(rng, 4, 3)
	strong := randomDuals(rng, p)
	// The same multipliers pooled twice give equal cuts: the newest is kept, the older one is
	// dominated.
	cp := NewCutPool(0)
	cp.Add(PooledCut{Kind: OptimalityCut, Duals: strong, Step: 0}) // older duplicate: dominated
	cp.Add(PooledCut{Kind: OptimalityCut, Duals: strong, Step: 0}) // newest: kept
	for round := 1; round <= 3; round++ {
		cuts, st, err := cp.Carry(p, 0, CarryOptions{EvictIdle: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(cuts) != 1 || st.Dominated != 1 {
			t.Fatalf("round %d: %d cuts, %d dominated; want 1 and 1", round, len(cuts), st.Dominated)
		}
		switch round {
		case 1:
			if cp.Len() != 2 || cp.Entries()[0].Idle != 1 || cp.Entries()[1].Idle != 0 || st.Evicted != 0 {
				t.Fatalf("round 1: pool %+v, evicted %d", cp.Entries(), st.Evicted)
			}
		case 2:
			if cp.Len() != 1 || st.Evicted != 1 || cp.Entries()[0].Idle != 0 {
				t.Fatalf("round 2: pool %+v, evicted %d; want the idle duplicate gone", cp.Entries(), st.Evicted)
			}
			cp.Add(PooledCut{Kind: OptimalityCut, Duals: strong, Step: 0}) // a new duplicate
		case 3:
			// Now the new entry is the newest and kept; the old one is the dominated duplicate.
			if cp.Len() != 2 || cp.Entries()[0].Idle != 1 || cp.Entries()[1].Idle != 0 {
				t.Fatalf("round 3: pool %+v", cp.Entries())
			}
		}
	}
	// Without EvictIdle idle entries stay; a deadline already passed judges nothing.
	idle := cp.Entries()[0].Idle
	if _, st, _ := cp.Carry(p, 0, CarryOptions{}); st.Evicted != 0 || cp.Len() != 2 || cp.Entries()[0].Idle != idle+1 {
		t.Fatalf("EvictIdle 0: evicted %d, pool %+v", st.Evicted, cp.Entries())
	}
	clk := fakeclock.New(time.Unix(100, 0))
	if _, st, _ := cp.Carry(p, 0, CarryOptions{EvictIdle: 1, Deadline: clk.Now(), Clock: clk}); st.Evicted != 0 || st.TimedOut != 2 || cp.Len() != 2 {
		t.Fatalf("deadline passed: %+v, pool %+v", st, cp.Entries())
	}
	// Cut short after the newest entry (the clock ticks 1 ms per reading: the start, then one per
	// job): the older one keeps its count.
	idle = cp.Entries()[0].Idle
	clk = fakeclock.Ticking(time.Unix(100, 0), time.Millisecond)
	_, st, _ := cp.Carry(p, 0, CarryOptions{Workers: 1, EvictIdle: 10, Deadline: time.Unix(100, 0).Add(2500 * time.Microsecond), Clock: clk})
	if st.TimedOut != 1 || st.Carried != 1 || cp.Entries()[0].Idle != idle || cp.Entries()[1].Idle != 0 {
		t.Fatalf("cut short: %+v, pool %+v (older idle was %d)", st, cp.Entries(), idle)
	}
}
