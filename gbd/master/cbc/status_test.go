package cbc

import (
	"math"
	"testing"
)

// TestInterpret pins the raw → Status mapping documented on interpret,
// including CBC states the known-answer problems do not reach on demand
// (abandoned, user interruption, solution limit).
func TestInterpret(t *testing.T) {
	p := &Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1}, Obj: []float64{1, 2},
		Integer: []bool{true, false}, ObjOffset: 10}
	sol := func() []float64 { return []float64{1 - 1e-9, 0.5} }
	const objRaw = 2.0 // 1·1 + 2·0.5
	cases := []struct {
		name      string
		raw       rawOutcome
		zeroGap   bool
		status    Status
		obj       float64
		bound     float64 // NaN: not checked
		hasX      bool
		tolerance float64
	}{
		{"optimal", rawOutcome{numIntegers: 1, provenOptimal: true, hasSolution: true, objValue: objRaw, bestPossible: objRaw - 1e-12}, true,
			Optimal, 12, 12, true, 1e-12},
		{"optimal on gap keeps CBC bound", rawOutcome{numIntegers: 1, provenOptimal: true, hasSolution: true, secondary: 2, objValue: objRaw, bestPossible: 1.5}, false,
			Optimal, 12, 11.5, true, 1e-12},
		{"optimal on CBC's own 1e-10 gap", rawOutcome{numIntegers: 1, provenOptimal: true, hasSolution: true, secondary: 2, objValue: objRaw, bestPossible: objRaw - 1e-11}, true,
			Optimal, 12, 12, true, 1e-12},
		{"abandoned", rawOutcome{numIntegers: 1, status: 2, abandoned: true, hasSolution: true, objValue: objRaw}, true,
			Failed, inf, math.Inf(-1), false, 0},
		{"relaxation unbounded", rawOutcome{numIntegers: 1, secondary: 7}, true,
			Unbounded, math.Inf(-1), math.Inf(-1), false, 0},
		{"infeasible", rawOutcome{numIntegers: 1, secondary: 1, provenInfeasible: true, objValue: 1e308}, true,
			Infeasible, inf, inf, false, 0},
		{"time limit with incumbent", rawOutcome{numIntegers: 1, status: 1, secondary: 4, secondsLimit: true, hasSolution: true, objValue: objRaw, bestPossible: 1.25}, true,
			StoppedWithIncumbent, 12, 11.25, true, 1e-12},
		{"time limit, bound not yet established", rawOutcome{numIntegers: 1, status: 1, secondary: 4, secondsLimit: true, hasSolution: true, objValue: objRaw, bestPossible: objRaw}, true,
			StoppedWithIncumbent, 12, math.Inf(-1), true, 0},
		{"node limit without incumbent", rawOutcome{numIntegers: 1, status: 1, secondary: 3, nodeLimit: true, objValue: 1e308, bestPossible: 0.75}, true,
			StoppedNoIncumbent, inf, 10.75, false, 1e-12},
		{"sentinel bound ignored", rawOutcome{numIntegers: 1, status: 1, secondary: 4, objValue: 1e308, bestPossible: 1.7976931348623157e308}, true,
			StoppedNoIncumbent, inf, math.Inf(-1), false, 0},
		{"user interruption (SIGINT)", rawOutcome{numIntegers: 1, status: 5, secondary: 5, hasSolution: true, objValue: objRaw, bestPossible: 1}, true,
			StoppedWithIncumbent, 12, 11, true, 1e-12},
		{"solution limit", rawOutcome{numIntegers: 1, status: 1, secondary: 6, solutionLimit: true, hasSolution: true, objValue: objRaw, bestPossible: 1}, true,
			StoppedWithIncumbent, 12, 11, true, 1e-12},
		{"finished without proof", rawOutcome{numIntegers: 1, status: 0, secondary: 0, hasSolution: true, objValue: objRaw}, true,
			Failed, inf, math.Inf(-1), false, 0},
		{"lp optimal", rawOutcome{status: -1, secondary: -1, provenOptimal: true, hasSolution: true, objValue: objRaw}, true,
			Optimal, 12, 12, true, 1e-12},
		{"lp infeasible (or unbounded, settled by Solve)", rawOutcome{status: -1, secondary: -1, provenInfeasible: true}, true,
			Infeasible, inf, inf, false, 0},
		{"lp not finished", rawOutcome{status: -1, secondary: -1}, true,
			Failed, inf, math.Inf(-1), false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := interpret(p, c.raw, sol(), c.zeroGap)
			if r.Status != c.status {
				t.Fatalf("status %v, want %v", r.Status, c.status)
			}
			if (r.X != nil) != c.hasX {
				t.Fatalf("X = %v", r.X)
			}
			if r.X != nil && r.X[0] != 1 {
				t.Errorf("integer column not rounded: %v", r.X[0])
			}
			if !(r.Obj == c.obj || math.Abs(r.Obj-c.obj) <= c.tolerance) {
				t.Errorf("obj %v, want %v", r.Obj, c.obj)
			}
			if !(r.BestBound == c.bound || math.Abs(r.BestBound-c.bound) <= c.tolerance) {
				t.Errorf("bound %v, want %v", r.BestBound, c.bound)
			}
			if r.BestBound > r.Obj {
				t.Errorf("bound %v above obj %v", r.BestBound, r.Obj)
			}
		})
	}
}
