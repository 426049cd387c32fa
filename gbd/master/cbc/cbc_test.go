package cbc

import (
	"math"
	"testing"
)

var inf = math.Inf(1)

func near(a, b, tol float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= tol*(1+math.Abs(b))
}

// checkFeasible verifies x against p with tolerance tol.
func checkFeasible(t *testing.T, p *Problem, x []float64, tol float64) {
	t.Helper()
	for j := 0; j < p.NumCols; j++ {
		if x[j] < p.ColLB[j]-tol || x[j] > p.ColUB[j]+tol {
			t.Errorf("x[%d]=%g outside [%g,%g]", j, x[j], p.ColLB[j], p.ColUB[j])
		}
		if p.Integer != nil && p.Integer[j] && x[j] != math.Round(x[j]) {
			t.Errorf("integer x[%d]=%g not integral", j, x[j])
		}
	}
	for r := range p.RowLB {
		s := 0.0
		for k := p.RowStart[r]; k < p.RowStart[r+1]; k++ {
			s += p.RowVal[k] * x[p.RowIdx[k]]
		}
		if s < p.RowLB[r]-tol || s > p.RowUB[r]+tol {
			t.Errorf("row %d activity %g outside [%g,%g]", r, s, p.RowLB[r], p.RowUB[r])
		}
	}
}

// knownCases are small problems with hand-derived answers.
func knownCases() []struct {
	name   string
	p      *Problem
	status Status
	obj    float64
	x      []float64 // nil: not checked (ties)
} {
	type kc = struct {
		name   string
		p      *Problem
		status Status
		obj    float64
		x      []float64
	}
	var cases []kc

	// max 5a+4b+3c s.t. 2a+3b+c ≤ 5, binary → {a,b}, value 9; offset 100.
	{
		var b rowBuilder
		b.add([]int32{0, 1, 2}, []float64{2, 3, 1}, -inf, 5)
		p := b.into(&Problem{NumCols: 3, ColLB: []float64{0, 0, 0}, ColUB: []float64{1, 1, 1},
			Obj: []float64{-5, -4, -3}, Integer: []bool{true, true, true}, ObjOffset: 100})
		cases = append(cases, kc{"knapsack", p, Optimal, 91, []float64{1, 1, 0}})
	}
	// min 2x+3y+z s.t. x+y+z = 7, x−y = 1, x,y ∈ [0,10], z ∈ [0,2] integer:
	// z = 6−2y ≤ 2 ⇒ y ≥ 2; y=2 gives (3,2,2) with 14.
	{
		var b rowBuilder
		b.add([]int32{0, 1, 2}, []float64{1, 1, 1}, 7, 7)
		b.add([]int32{0, 1}, []float64{1, -1}, 1, 1)
		p := b.into(&Problem{NumCols: 3, ColLB: []float64{0, 0, 0}, ColUB: []float64{10, 10, 2},
			Obj: []float64{2, 3, 1}, Integer: []bool{true, true, true}})
		cases = append(cases, kc{"equalities", p, Optimal, 14, []float64{3, 2, 2}})
	}
	// Ranged row 1 ≤ a+b ≤ 1.5 with binaries: exactly one; min −2a−b → a.
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, 1}, 1, 1.5)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1},
			Obj: []float64{-2, -1}, Integer: []bool{true, true}})
		cases = append(cases, kc{"ranged", p, Optimal, -2, []float64{1, 0}})
	}
	// Integer column with negative fractional bounds and no rows.
	cases = append(cases, kc{"norows", &Problem{NumCols: 2, ColLB: []float64{-3.5, 0}, ColUB: []float64{10, 4},
		Obj: []float64{1, -0.5}, Integer: []bool{true, false}}, Optimal, -5, []float64{-3, 4}})
	// a+b = 1.5 has LP solutions but no binary one.
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, 1}, 1.5, 1.5)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1},
			Obj: []float64{1, 1}, Integer: []bool{true, true}})
		cases = append(cases, kc{"infeasible-integer", p, Infeasible, inf, nil})
	}
	// a+b ≥ 3 with binaries: even the LP relaxation is infeasible.
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, 1}, 3, inf)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1},
			Obj: []float64{1, 1}, Integer: []bool{true, true}})
		cases = append(cases, kc{"infeasible-lp", p, Infeasible, inf, nil})
	}
	// min −x−y, x ≥ 0 integer, y ≥ 0, x − y ≤ 1: ray (1,1).
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, -1}, -inf, 1)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{inf, inf},
			Obj: []float64{-1, -1}, Integer: []bool{true, false}})
		cases = append(cases, kc{"unbounded-mip", p, Unbounded, math.Inf(-1), nil})
	}
	// Pure LP: min −x−y, x+2y ≤ 4, 3x+y ≤ 6 → (1.6, 1.2), −2.8.
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, 2}, -inf, 4)
		b.add([]int32{0, 1}, []float64{3, 1}, -inf, 6)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{inf, inf},
			Obj: []float64{-1, -1}})
		cases = append(cases, kc{"lp", p, Optimal, -2.8, []float64{1.6, 1.2}})
	}
	// Pure LP, x ≥ 2 as a row but x ≤ 1 as a bound.
	{
		var b rowBuilder
		b.add([]int32{0}, []float64{1}, 2, inf)
		p := b.into(&Problem{NumCols: 1, ColLB: []float64{0}, ColUB: []float64{1}, Obj: []float64{1}})
		cases = append(cases, kc{"lp-infeasible", p, Infeasible, inf, nil})
	}
	// Pure LP min −x, x ≥ 0 unbounded above. Clp reports this through
	// isProvenInfeasible (dual infeasible), so it exercises the zero-objective
	// re-check.
	{
		var b rowBuilder
		b.add([]int32{0, 1}, []float64{1, -1}, -inf, 3)
		p := b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{inf, inf}, Obj: []float64{-1, 0}})
		cases = append(cases, kc{"lp-unbounded", p, Unbounded, math.Inf(-1), nil})
	}
	return cases
}

func TestKnownAnswers(t *testing.T) {
	for _, preset := range []Preset{PresetAuto, PresetCBC} {
		for _, c := range knownCases() {
			t.Run(c.name+"/"+[]string{"auto", "tiny", "cbc"}[preset], func(t *testing.T) {
				r, err := Solve(c.p, Options{Preset: preset})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%v obj %g bound %g nodes %d raw %+v", r.Status, r.Obj, r.BestBound, r.Nodes, r.Raw)
				if r.Status != c.status {
					t.Fatalf("status %v, want %v (raw %+v)", r.Status, c.status, r.Raw)
				}
				if !near(r.Obj, c.obj, 1e-7) {
					t.Errorf("obj %g, want %g", r.Obj, c.obj)
				}
				if r.BestBound > r.Obj {
					t.Errorf("bound %g above obj %g", r.BestBound, r.Obj)
				}
				switch r.Status {
				case Optimal:
					if !near(r.BestBound, r.Obj, 1e-9) {
						t.Errorf("optimal but bound %g != obj %g", r.BestBound, r.Obj)
					}
					checkFeasible(t, c.p, r.X, 1e-7)
					for j := range c.x {
						if !near(r.X[j], c.x[j], 1e-7) {
							t.Errorf("x = %v, want %v", r.X, c.x)
							break
						}
					}
				case Infeasible:
					if r.X != nil || !math.IsInf(r.BestBound, 1) {
						t.Errorf("infeasible: X %v bound %g", r.X, r.BestBound)
					}
				case Unbounded:
					if r.X != nil || !math.IsInf(r.BestBound, -1) {
						t.Errorf("unbounded: X %v bound %g", r.X, r.BestBound)
					}
				}
			})
		}
	}
}

func TestStatusString(t *testing.T) {
	want := map[Status]string{Failed: "Failed", Optimal: "Optimal", StoppedWithIncumbent: "StoppedWithIncumbent",
		StoppedNoIncumbent: "StoppedNoIncumbent", Infeasible: "Infeasible", Unbounded: "Unbounded", Status(42): "Status(42)"}
	for s, w := range want {
		if s.String() != w {
			t.Errorf("%d: %q, want %q", int(s), s.String(), w)
		}
	}
	var zero Result
	if zero.Status != Failed || zero.Status.HasIncumbent() {
		t.Error("zero Result must read as Failed without incumbent")
	}
}
