package gbd_test

import (
	"math"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
)

// TestDecide pins how a proposal becomes an assignment, for the engine and Table I alike.
func TestDecide(t *testing.T) {
	ypb := synthesis.Admissible()
	nan := math.NaN()
	logits := func(vals map[int]float64, fill float64) []float64 {
		l := make([]float64, ypb.Count())
		for i := range l {
			l[i] = fill
		}
		for i, v := range vals {
			l[i] = v
		}
		return l
	}
	in := func(j int) []float64 { return ypb.Float(j, make([]float64, ypb.NY)) }
	cases := []struct {
		name string
		p    gbd.Proposal
		j    int
		why  string
	}{
		{"argmax", gbd.Proposal{Logits: logits(map[int]float64{7: 3}, 0)}, 7, gbd.OutcomeNone},
		{"first of a tie", gbd.Proposal{Logits: logits(map[int]float64{4: 2, 9: 2}, 0)}, 4, gbd.OutcomeNone},
		{"NaN skipped, even first", gbd.Proposal{Logits: logits(map[int]float64{0: nan, 5: -1}, -2)}, 5, gbd.OutcomeNone},
		{"NaN skipped after the best", gbd.Proposal{Logits: logits(map[int]float64{3: 1, 4: nan}, 0)}, 3, gbd.OutcomeNone},
		{"only NaN", gbd.Proposal{Logits: logits(nil, nan)}, -1, gbd.OutcomeError},
		{"-Inf is a vote", gbd.Proposal{Logits: logits(map[int]float64{2: math.Inf(-1)}, nan)}, 2, gbd.OutcomeNone},
		{"wrong length", gbd.Proposal{Logits: []float64{1, 2}}, -1, gbd.OutcomeError},
		{"nothing", gbd.Proposal{}, -1, gbd.OutcomeError},
		{"probabilities rounded", gbd.Proposal{Probs: []float64{0.9, 0.1, 0.75, 0.25, 0}}, ypb.Index([]float64{1, 0, 1, 0, 0}), gbd.OutcomeNone},
		{"probability undecided", gbd.Proposal{Probs: []float64{0.9, 0.1, 0.5, 0, 0}}, -1, gbd.OutcomeUndecided},
		{"probability NaN undecided", gbd.Proposal{Probs: []float64{0.9, 0.1, nan, 0, 0}}, -1, gbd.OutcomeUndecided},
		{"rounded outside Y_pb", gbd.Proposal{Probs: []float64{1, 1, 0, 0, 0}}, -1, gbd.OutcomeUndecided},
		{"probabilities wrong length", gbd.Proposal{Probs: []float64{1}}, -1, gbd.OutcomeError},
		{"assignment", gbd.Proposal{Assign: in(6)}, 6, gbd.OutcomeNone},
		{"assignment outside Y_pb", gbd.Proposal{Assign: []float64{1, 1, 0, 0, 0}}, -1, gbd.OutcomeError},
		{"assignment not 0/1", gbd.Proposal{Assign: []float64{0.9, 0.1, 1, 0, 0}}, -1, gbd.OutcomeError},
		{"assignment wrong length", gbd.Proposal{Assign: []float64{1}}, -1, gbd.OutcomeError},
	}
	for _, c := range cases {
		y := make([]float64, ypb.NY)
		j, why := gbd.Decide(ypb, c.p, y)
		if j != c.j || why != c.why {
			t.Errorf("%s: Decide = %d %q, want %d %q", c.name, j, why, c.j, c.why)
			continue
		}
		if j >= 0 && ypb.Index(y) != j {
			t.Errorf("%s: y = %v is not Y_pb[%d] = %v", c.name, y, j, in(j))
		}
	}
}

// In an implicit Y_pb, which has no order, a decided proposal is j = 0 and y holds it; only the
// proposals that name their assignment (Assign, Probs) can decide, Logits cannot.
func TestDecideImplicit(t *testing.T) {
	rows := []gbd.PureRow{{Idx: []int{0, 1, 2}, Coef: []float64{1, 1, 1}, RHS: 1}}
	ypb, err := gbd.ImplicitAdmissible(3, rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    gbd.Proposal
		j    int
		why  string
	}{
		{"assignment", gbd.Proposal{Assign: []float64{0, 1, 0}}, 0, gbd.OutcomeNone},
		{"assignment outside", gbd.Proposal{Assign: []float64{1, 1, 0}}, -1, gbd.OutcomeError},
		{"assignment not 0/1", gbd.Proposal{Assign: []float64{0, 0.9, 0}}, -1, gbd.OutcomeError},
		{"probabilities", gbd.Proposal{Probs: []float64{0.1, 0.9, 0}}, 0, gbd.OutcomeNone},
		{"probabilities outside", gbd.Proposal{Probs: []float64{0.9, 0.9, 0}}, -1, gbd.OutcomeUndecided},
		{"logits", gbd.Proposal{Logits: []float64{1}}, -1, gbd.OutcomeError},
	} {
		y := make([]float64, 3)
		j, why := gbd.Decide(ypb, c.p, y)
		if j != c.j || why != c.why {
			t.Errorf("%s: Decide = %d %q, want %d %q", c.name, j, why, c.j, c.why)
		} else if j == 0 && !ypb.Contains(y) {
			t.Errorf("%s: y = %v not admissible", c.name, y)
		}
	}
}

// TestSatisfiesFeasibilityCuts pins the screen's tolerance at gbd.FeasTol, optimality cuts ignored.
func TestSatisfiesFeasibilityCuts(t *testing.T) {
	y := []float64{1, 0}
	for _, c := range []struct {
		cuts []gbd.Cut
		want bool
	}{
		{nil, true},
		{[]gbd.Cut{{Kind: gbd.OptimalityCut, Coef: []float64{5, 0}, Const: 1}}, true},
		{[]gbd.Cut{{Kind: gbd.FeasibilityCut, Coef: []float64{1, 7}, Const: -1 + gbd.FeasTol}}, true},
		{[]gbd.Cut{{Kind: gbd.FeasibilityCut, Coef: []float64{1, 7}, Const: -1 + 2*gbd.FeasTol}}, false},
		{[]gbd.Cut{{Kind: gbd.FeasibilityCut, Coef: []float64{0, 1}, Const: 0}, {Kind: gbd.FeasibilityCut, Coef: []float64{1, 0}, Const: 0}}, false},
	} {
		if got := gbd.SatisfiesFeasibilityCuts(c.cuts, y); got != c.want {
			t.Errorf("cuts %+v at %v: %v, want %v", c.cuts, y, got, c.want)
		}
	}
}

// TestCutKindText: kinds round-trip through their stored names; anything else is refused.
func TestCutKindText(t *testing.T) {
	for _, k := range []gbd.CutKind{gbd.OptimalityCut, gbd.FeasibilityCut} {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back gbd.CutKind
		if err := back.UnmarshalText(b); err != nil || back != k || string(b) != k.String() {
			t.Errorf("%v: %q → %v, %v", k, b, back, err)
		}
	}
	if _, err := gbd.CutKind(7).MarshalText(); err == nil {
		t.Error("kind 7 marshalled")
	}
	var k gbd.CutKind
	if err := k.UnmarshalText([]byte("Optimality")); err == nil {
		t.Error(`"Optimality" parsed`)
	}
}
