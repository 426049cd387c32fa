package experiment

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/plant/synthesis"
	"gbdmpc/policy"
)

// TestDescribeData checks the statistics on a hand-made dataset over the synthesis Y_pb.
func TestDescribeData(t *testing.T) {
	ypb := synthesis.Admissible()
	opt := func(coef []float64, c float64) gbd.Cut { return gbd.Cut{Kind: gbd.OptimalityCut, Coef: coef, Const: c} }
	feas := func(coef []float64, c float64) gbd.Cut {
		return gbd.Cut{Kind: gbd.FeasibilityCut, Coef: coef, Const: c}
	}
	prev := []float64{0, 1, 0, 0, 0}
	// y1 = 0 is infeasible: only the six assignments with y1 = 1 (indices 6..11) remain.
	noY1 := feas([]float64{-2, 0, 0, 0, 0}, 1)
	// Only y3 costs: every y with y3 = 0 ties.
	tieY3 := opt([]float64{0, 0, 5, 0, 0}, 1)
	// A strict optimum: y = 10010 (index 8) is the only minimiser.
	strict := opt([]float64{-1, 1, 1, -1, 1}, 0)
	ds := &policy.Dataset{Family: "synthesis", Ypb: ypb, Samples: []policy.Sample{
		{Set: 0, Prev: prev, Cuts: []gbd.Cut{noY1}, Label: 6},                       // no optimality cut: tie, first optimal
		{Set: 0, Prev: prev, Cuts: []gbd.Cut{tieY3}, Label: 0},                      // tie, first optimal
		{Set: 0, Prev: prev, Cuts: []gbd.Cut{tieY3}, Label: 0},                      // duplicate
		{Set: 1, Prev: prev, Cuts: []gbd.Cut{strict, noY1}, Label: 8},               // strict
		{Set: 1, Prev: prev, Cuts: []gbd.Cut{noY1, strict}, Label: 8},               // duplicate, cuts reordered
		{Set: 1, Prev: prev, Cuts: []gbd.Cut{tieY3}, Label: 1},                      // duplicate with another label, optimal but not first
		{Set: 1, Prev: []float64{1, 0, 0, 0, 0}, Cuts: []gbd.Cut{strict}, Label: 0}, // label not optimal
	}}
	st := DescribeData(ds)
	want := DataStats{Samples: 7, Sets: 2, PerSetMean: 3.5, PerSetMin: 3, PerSetMax: 4, WithFeasCuts: 3, NoOptimalityCut: 1,
		Tied: 4, TiedWithOptimalityCuts: 3, LabelFirstOptimal: 5, LabelNotOptimal: 1, Duplicates: 3, DuplicateConflicts: 1}
	st.ClassShare, st.Majority = nil, 0
	st.OnShare, st.MarginalBCE, st.LabelIsPrev, st.MeanFlips = nil, 0, 0, 0 // TestDescribeDataImplicit
	if st.String() != want.String() {
		t.Errorf("got\n%v\nwant\n%v", st, want)
	}
	test := &policy.Dataset{Family: "synthesis", Ypb: ypb, Samples: ds.Samples[3:5]}
	if n := CrossDuplicates(&policy.Dataset{Family: "synthesis", Ypb: ypb, Samples: ds.Samples[:4]}, test); n != 2 {
		t.Errorf("cross duplicates %d, want 2", n)
	}
}

// Over a Y_pb too large to enumerate a label is an assignment: the statistics that scan Y_pb are
// left out, the others are computed (before, DescribeData indexed the class shares by the label,
// −1 there, and panicked).
func TestDescribeDataImplicit(t *testing.T) {
	in := synthesis.SampleFeasible(rand.New(rand.NewPCG(1, 1)))
	ypb, err := gbd.ImplicitAdmissible(5, synthesis.Problem(in).Pure)
	if err != nil {
		t.Fatal(err)
	}
	c := gbd.Cut{Kind: gbd.OptimalityCut, Coef: []float64{1, 0, 0, 0, 0}, Const: 2}
	prev := []float64{1, 0, 0, 1, 0}
	ds := &policy.Dataset{Family: "synthesis", Ypb: ypb, Samples: []policy.Sample{
		{Set: 0, Prev: prev, Cuts: []gbd.Cut{c}, Label: -1, Y: []uint8{1, 0, 0, 1, 0}},
		{Set: 0, Prev: prev, Cuts: []gbd.Cut{c}, Label: -1, Y: []uint8{1, 0, 0, 1, 0}}, // duplicate
		{Set: 1, Prev: prev, Cuts: []gbd.Cut{c}, Label: -1, Y: []uint8{1, 0, 1, 0, 0}}, // duplicate, another label
	}}
	st := DescribeData(ds)
	if !st.Implicit || st.Samples != 3 || st.Sets != 2 || st.Duplicates != 2 || st.DuplicateConflicts != 1 || st.ClassShare != nil {
		t.Errorf("%+v", st)
	}
	if s := st.String(); !strings.Contains(s, "not computed") || strings.Contains(s, "tied labels") {
		t.Errorf("rendered as\n%s", s)
	}
	// Two labels are the previous iterate, the third differs from it in two binaries; the binaries
	// are on in 3, 0, 1, 2 and 0 of the 3 labels.
	h := func(p float64) float64 { return -p*math.Log(p) - (1-p)*math.Log(1-p) }
	if st.LabelIsPrev != 2 || math.Abs(st.MeanFlips-2.0/3) > 1e-12 || !slices.Equal(st.OnShare, []float64{1, 0, 1.0 / 3, 2.0 / 3, 0}) ||
		math.Abs(st.MarginalBCE-(h(1.0/3)+h(2.0/3))/5) > 1e-12 {
		t.Errorf("label = prev %d, flips %v, shares %v, BCE %v", st.LabelIsPrev, st.MeanFlips, st.OnShare, st.MarginalBCE)
	}
}
