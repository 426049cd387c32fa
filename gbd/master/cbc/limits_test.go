package cbc

import (
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gbdmpc/telemetry"
)

// mkp is a multi-dimensional 0/1 knapsack (maximise profit, as min −profit)
// with correlated profits, which keeps plain branch and bound busy for
// hundreds of nodes while staying small enough to enumerate.
type mkp struct {
	n      int
	profit []float64
	weight [][]float64 // [constraint][item]
	cap    []float64
}

func randomMKP(rng *rand.Rand, n, m int) *mkp {
	k := &mkp{n: n, profit: make([]float64, n), weight: make([][]float64, m), cap: make([]float64, m)}
	for c := range k.weight {
		k.weight[c] = make([]float64, n)
		sum := 0.0
		for i := range k.weight[c] {
			w := float64(10 + rng.Intn(51))
			k.weight[c][i] = w
			sum += w
		}
		k.cap[c] = math.Floor(sum / 2)
	}
	for i := range k.profit {
		s := 0.0
		for c := range k.weight {
			s += k.weight[c][i]
		}
		k.profit[i] = s/float64(m) + float64(rng.Intn(11)) + rng.Float64()*0.01
	}
	return k
}

func (k *mkp) problem() *Problem {
	p := &Problem{NumCols: k.n, ColLB: make([]float64, k.n), ColUB: make([]float64, k.n), Obj: make([]float64, k.n), Integer: make([]bool, k.n)}
	var b rowBuilder
	idx := make([]int32, k.n)
	for i := range idx {
		idx[i] = int32(i)
		p.ColUB[i], p.Obj[i], p.Integer[i] = 1, -k.profit[i], true
	}
	for c := range k.weight {
		b.add(idx, k.weight[c], math.Inf(-1), k.cap[c])
	}
	return b.into(p)
}

// brute walks all 2^n subsets in Gray-code order, updating sums in O(m)
// per step, and returns the minimum of −profit.
func (k *mkp) brute() float64 {
	m := len(k.weight)
	load := make([]float64, m)
	in := make([]bool, k.n)
	profit, best := 0.0, 0.0 // the empty set is feasible
	for g := 1; g < 1<<k.n; g++ {
		i := 0
		for g>>i&1 == 0 {
			i++
		}
		sign := 1.0
		if in[i] {
			sign = -1
		}
		in[i] = !in[i]
		profit += sign * k.profit[i]
		ok := true
		for c := 0; c < m; c++ {
			load[c] += sign * k.weight[c][i]
			if load[c] > k.cap[c]+1e-9 {
				ok = false
			}
		}
		if ok && profit > best {
			best = profit
		}
	}
	return -best
}

// TestStoppedBoundIsValid stops CBC with tiny node and wall-clock limits on
// knapsacks whose optimum is known by enumeration, and checks that the
// reported bound never exceeds the optimum and the incumbent never beats it.
func TestStoppedBoundIsValid(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	limits := []Options{
		{MaxNodes: 1}, {MaxNodes: 3}, {MaxNodes: 10}, {MaxNodes: 40}, {MaxNodes: 150},
		{TimeLimit: time.Nanosecond}, {TimeLimit: time.Millisecond}, {TimeLimit: 4 * time.Millisecond},
		{RelGap: 0.05}, {AbsGap: 20},
	}
	instances := 6
	if v := os.Getenv("CBC_STRESS_INSTANCES"); v != "" {
		instances, _ = strconv.Atoi(v)
	}
	if testing.Short() {
		instances = 2
	}
	var stopped, cbcBoundUsed, withIncumbent, optimal, gapBound, overruled int
	for inst := 0; inst < instances; inst++ {
		k := randomMKP(rng, 20, 3)
		opt := k.brute()
		p := k.problem()
		for _, preset := range []Preset{PresetTiny, PresetCBC} {
			for li, lim := range limits {
				if preset == PresetCBC && li < 5 && li != 2 {
					// CBC's root cuts make each node-limited run on these
					// knapsacks cost ~0.5 s; one node limit is enough.
					continue
				}
				o := lim
				o.Preset = preset
				t0 := time.Now()
				r, err := Solve(p, o)
				el := time.Since(t0)
				if err != nil {
					t.Fatal(err)
				}
				if o.TimeLimit > 0 && el > o.TimeLimit+2*time.Second {
					t.Errorf("inst %d: took %v for limit %v", inst, el, o.TimeLimit)
				}
				if r.BestBound > opt+1e-6*(1+math.Abs(opt)) {
					t.Errorf("inst %d preset %d %+v: bound %.9g exceeds optimum %.9g (raw %+v)", inst, preset, lim, r.BestBound, opt, r.Raw)
				}
				if r.BestBound > r.Obj {
					t.Errorf("bound %g above incumbent %g", r.BestBound, r.Obj)
				}
				switch r.Status {
				case Optimal:
					optimal++
					if o.AbsGap > 0 || o.RelGap > 0 {
						if r.Obj < opt-1e-6*(1+math.Abs(opt)) || r.Obj-r.BestBound > o.AbsGap+o.RelGap*math.Max(math.Abs(r.Obj), math.Abs(r.BestBound))+1e-6 {
							t.Errorf("inst %d %+v: gap stop obj %.9g bound %.9g opt %.9g", inst, lim, r.Obj, r.BestBound, opt)
						}
						if r.BestBound < r.Obj {
							gapBound++
						}
					} else if math.Abs(r.Obj-opt) > 1e-6*(1+math.Abs(opt)) {
						t.Errorf("inst %d: optimal %.9g, enumeration %.9g", inst, r.Obj, opt)
					}
				case StoppedWithIncumbent:
					stopped++
					withIncumbent++
					if r.Obj < opt-1e-6*(1+math.Abs(opt)) {
						t.Errorf("inst %d: incumbent %.9g better than optimum %.9g", inst, r.Obj, opt)
					}
					checkFeasible(t, p, r.X, 1e-6)
				case StoppedNoIncumbent:
					stopped++
					if r.X != nil || !math.IsInf(r.Obj, 1) {
						t.Errorf("no incumbent but X=%v Obj=%g", r.X, r.Obj)
					}
				default:
					t.Fatalf("inst %d %+v: unexpected status %v raw %+v", inst, lim, r.Status, r.Raw)
				}
				if r.Raw.InfeasibleOverruled {
					overruled++
				}
				if r.Status != Optimal {
					if math.IsNaN(r.Raw.LPBound) {
						t.Errorf("stopped without LP bound")
					} else if r.BestBound < r.Raw.LPBound-1e-9 {
						t.Errorf("bound %g below LP relaxation %g", r.BestBound, r.Raw.LPBound)
					}
					if r.BestBound > r.Raw.LPBound+1e-7*(1+math.Abs(opt)) {
						cbcBoundUsed++
					}
				}
			}
		}
	}
	t.Logf("optimal %d (gap-stopped with bound < obj %d), stopped %d (with incumbent %d), CBC tree bound above LP bound %d, false infeasible overruled %d",
		optimal, gapBound, stopped, withIncumbent, cbcBoundUsed, overruled)
	if stopped == 0 || withIncumbent == 0 || cbcBoundUsed == 0 {
		t.Errorf("limits did not exercise the stopped paths")
	}
}

// TestTimeLimitIsWallClock pins the parameters that make TimeLimit
// wall-clock: CBC's default timeMode is "cpu".
func TestTimeLimitIsWallClock(t *testing.T) {
	p := randomMaster(rand.New(rand.NewSource(1)), 6, 3, 0).problem()
	args := buildArgs(p, 6, &Options{TimeLimit: 1500 * time.Millisecond})
	var mode, secs string
	for _, a := range args {
		switch a.Name {
		case "timeMode":
			mode = a.Value
		case "seconds":
			secs = a.Value
		}
	}
	if mode != "elapsed" || secs != "1.5" {
		t.Fatalf("timeMode=%q seconds=%q in %v", mode, secs, args)
	}
}

func TestMIPStart(t *testing.T) {
	rng := rand.New(rand.NewSource(99))
	checked := 0
	for inst := 0; inst < 20; inst++ {
		m := randomMaster(rng, 12, 20, 0)
		p := m.problem()
		opt, arg := m.brute()
		// A deliberately poor but feasible start: y = 0 satisfies every
		// group row, μ is recomputed by CBC.
		start := make([]float64, p.NumCols)
		startObj := m.eval(start[:m.NY])

		// With one node and no heuristics (PresetTiny) CBC knows only what
		// the root LP and the start give it.
		base, err := Solve(p, Options{MaxNodes: 1, Preset: PresetTiny})
		if err != nil {
			t.Fatal(err)
		}
		if base.Status != StoppedNoIncumbent {
			continue // root LP happened to be integral; nothing to show
		}
		checked++
		for _, o := range []Options{
			{MaxNodes: 1, Preset: PresetTiny, Start: start},
			{TimeLimit: time.Nanosecond, Preset: PresetTiny, Start: start},
			// CBC's full parameter set (preprocessing is off for a
			// started, time-limited solve); the timeout stops it at once.
			{TimeLimit: time.Nanosecond, Preset: PresetCBC, Start: start},
		} {
			r, err := Solve(p, o)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Status.HasIncumbent() {
				t.Fatalf("inst %d: start not used: %v raw %+v", inst, r.Status, r.Raw)
			}
			if r.Obj > startObj+1e-6 || r.Obj < opt-1e-6 {
				t.Errorf("inst %d: incumbent %g, start %g, optimum %g", inst, r.Obj, startObj, opt)
			}
			if r.BestBound > opt+1e-6 {
				t.Errorf("inst %d: bound %g above optimum %g", inst, r.BestBound, opt)
			}
		}
		// The optimal y as a start must be returned as is under a node limit.
		best := append(append([]float64(nil), arg...), 0)
		r, err := Solve(p, Options{MaxNodes: 1, Preset: PresetTiny, Start: best})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Status.HasIncumbent() || math.Abs(r.Obj-opt) > 1e-6 {
			t.Errorf("inst %d: optimal start gave %v obj %g, want %g", inst, r.Status, r.Obj, opt)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d instances had a fractional root; test proves little", checked)
	}
}

// TestFalseInfeasibleOverruled reproduces what CBC 2.10.8 returns when the
// time limit expires inside preprocessing (status 0, secondary 1, proven
// infeasible, no limit flag) and checks Solve only believes it when the LP
// relaxation is infeasible too.
func TestFalseInfeasibleOverruled(t *testing.T) {
	defer func() { testHookRaw = nil }()
	testHookRaw = func(r *rawOutcome) {
		*r = rawOutcome{numIntegers: r.numIntegers, status: 0, secondary: 1, provenInfeasible: true,
			objValue: math.MaxFloat64, bestPossible: -400}
	}
	k := randomMKP(rand.New(rand.NewSource(1)), 12, 2)
	p := k.problem()
	opt := k.brute()
	r, err := Solve(p, Options{TimeLimit: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StoppedNoIncumbent || !r.Raw.InfeasibleOverruled {
		t.Fatalf("status %v overruled %v", r.Status, r.Raw.InfeasibleOverruled)
	}
	if math.IsNaN(r.Raw.LPBound) || r.BestBound != r.Raw.LPBound || r.BestBound > opt {
		t.Errorf("bound %g, LP %g, optimum %g", r.BestBound, r.Raw.LPBound, opt)
	}
	// Without a time limit the claim cannot come from the preprocessing
	// timeout and is believed.
	if r, _ := Solve(p, Options{}); r.Status != Infeasible {
		t.Errorf("no time limit: %v", r.Status)
	}
	// A limit longer than the solve cannot have been hit either.
	if r, _ := Solve(p, Options{TimeLimit: time.Hour}); r.Status != Infeasible {
		t.Errorf("unreached limit: %v", r.Status)
	}
	// An infeasible LP relaxation keeps the claim.
	var b rowBuilder
	b.add([]int32{0, 1}, []float64{1, 1}, 3, math.Inf(1))
	bad := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1}, Obj: []float64{1, 1}, Integer: []bool{true, true}})
	if r, _ := Solve(bad, Options{TimeLimit: time.Nanosecond}); r.Status != Infeasible || r.Raw.InfeasibleOverruled {
		t.Errorf("LP-infeasible: %v overruled %v", r.Status, r.Raw.InfeasibleOverruled)
	}
}

// loadMaster reads a master problem kept in testdata and its MIP start; bounds are telemetry.Num,
// the decision log's numbers, so ±Inf are "+Inf" and "-Inf".
func loadMaster(t *testing.T, name string) (*Problem, []float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Problem struct {
			Problem
			ColLB, ColUB, RowLB, RowUB []telemetry.Num
		}
		Start []float64
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	p := d.Problem.Problem
	floats := func(v []telemetry.Num) []float64 {
		f := make([]float64, len(v))
		for i, x := range v {
			f[i] = float64(x)
		}
		return f
	}
	p.ColLB, p.ColUB = floats(d.Problem.ColLB), floats(d.Problem.ColUB)
	p.RowLB, p.RowUB = floats(d.Problem.RowLB), floats(d.Problem.RowUB)
	return &p, d.Start
}

// A GBD master of the 40-binary pump station, recorded where an agent's time-limited master
// crashed the process: with a MIP start and a time limit that expires while CBC preprocesses,
// CBC 2.10.8 dereferences NULL in CglPreProcess::postProcess. Swept over limits that land in
// preprocessing (the unguarded solve crashed within the sweep in every try), each solve must end
// with a valid bound and the start's incumbent, and preprocessing must stay off whatever Params say.
func TestStartedTimeLimitDoesNotCrash(t *testing.T) {
	p, start := loadMaster(t, "started-limit-master.json")
	exact, err := Solve(p, Options{})
	if err != nil || exact.Status != Optimal {
		t.Fatalf("exact solve: %v %v", exact.Status, err)
	}
	for i := range 200 {
		o := Options{TimeLimit: time.Duration(200+i*50) * time.Microsecond, Start: start,
			Params: []Param{{"preprocess", "on"}}}
		r, err := Solve(p, o)
		if err != nil {
			t.Fatal(err)
		}
		if r.BestBound > exact.Obj+1e-6 || (r.Status.HasIncumbent() && r.Obj < exact.Obj-1e-6) {
			t.Fatalf("limit %v: %v obj %g bound %g, optimum %g", o.TimeLimit, r.Status, r.Obj, r.BestBound, exact.Obj)
		}
	}
	args := buildArgs(p, 40, &Options{TimeLimit: time.Millisecond, Start: start, Params: []Param{{"preprocess", "on"}}})
	if last := args[len(args)-1]; last != (Param{"preprocess", "off"}) {
		t.Errorf("started, time-limited solve ends its parameters with %v", last)
	}
	for _, o := range []Options{{TimeLimit: time.Millisecond}, {Start: start}} {
		for _, a := range buildArgs(p, 40, &o) {
			if a.Name == "preprocess" {
				t.Errorf("%+v: preprocessing set (%v) where only one of start and limit is given", o, a)
			}
		}
	}
}
