package policy

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gbdmpc/gbd"
)

// freshAgent builds an untrained agent with the paper's architecture; inference cost and allocation
// do not depend on the weights' values.
func freshAgent(t testing.TB, variant Variant, ypb *gbd.Admissible) *Agent {
	t.Helper()
	a, err := newAgent(variant, Arch{}, "synthesis", ypb, identityNorm(), rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestEncodeGraph(t *testing.T) {
	cuts := []gbd.Cut{
		{Kind: gbd.OptimalityCut, Coef: []float64{2, 0, -1}, Const: -5},
		{Kind: gbd.FeasibilityCut, Coef: []float64{0, 3, 0}, Const: 1},
	}
	prev := []float64{1, 0, 1}
	nm := Norm{RHSMean: [2]float64{1, 0}, RHSStd: [2]float64{2, 1}, CoefMean: [2]float64{0, 1}, CoefStd: [2]float64{1, 2}}
	var g graph
	g.encode(cuts, prev, &nm, &Arch{})
	if g.n != 5 || g.nvar != 3 {
		t.Fatalf("n = %d, nvar = %d; want 5 nodes, 3 variables", g.n, g.nvar)
	}
	wantX := []float64{
		1, 1, 0, 0,
		1, 0, 0, 0,
		1, 1, 0, 0,
		0, 0, (5 - 1) / 2.0, 0, // optimality cut: RHS = −Const = 5, normalised with kind 0 stats
		0, 0, -1, 1, // feasibility cut: RHS = −1, kind 1 stats (mean 0, std 1)
	}
	for i, v := range wantX {
		if g.x[i] != v {
			t.Errorf("x[%d] = %v, want %v", i, g.x[i], v)
		}
	}
	// Three non-zero coefficients give three edges, each stored in both directions.
	type edge struct {
		from, to int32
		e        float64
	}
	var got []edge
	for i := 0; i < g.n; i++ {
		for p := g.ptr[i]; p < g.ptr[i+1]; p++ {
			got = append(got, edge{int32(i), g.adj[p], g.ef[p]})
		}
	}
	want := []edge{{0, 3, 2}, {1, 4, 1}, {2, 3, -1}, {3, 0, 2}, {3, 2, -1}, {4, 1, 1}}
	if len(got) != len(want) {
		t.Fatalf("edges %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("edge %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestFitNorm(t *testing.T) {
	s := []Sample{{Cuts: []gbd.Cut{
		{Kind: gbd.OptimalityCut, Coef: []float64{1, 0}, Const: -10},
		{Kind: gbd.OptimalityCut, Coef: []float64{3, 0}, Const: -20},
		{Kind: gbd.FeasibilityCut, Coef: []float64{-2, 0}, Const: 1},
	}}}
	nm := FitNorm(s, Arch{})
	if nm.RHSMean[0] != 15 || nm.RHSStd[0] != 5 || nm.CoefMean[0] != 2 || nm.CoefStd[0] != 1 {
		t.Errorf("optimality stats %+v", nm)
	}
	// One feasibility cut: no spread, so std falls back to 1.
	if nm.RHSMean[1] != -1 || nm.RHSStd[1] != 1 || nm.CoefMean[1] != -2 || nm.CoefStd[1] != 1 {
		t.Errorf("feasibility stats %+v", nm)
	}
	if e := FitNorm(nil, Arch{}); e != identityNorm() {
		t.Errorf("empty data: %+v, want identity", e)
	}
}

func TestProposeShapes(t *testing.T) {
	ypb := synthesisYpb(t)
	rng := rand.New(rand.NewPCG(3, 3))
	cuts, prev := randomMaster(rng, ypb.NY, 10)
	view := &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	p, err := freshAgent(t, Proposed, ypb).Propose(view)
	if err != nil || len(p.Logits) != ypb.Count() || p.Probs != nil {
		t.Fatalf("proposed: %d logits, probs %v, err %v", len(p.Logits), p.Probs, err)
	}
	p, err = freshAgent(t, Independent, ypb).Propose(view)
	if err != nil || len(p.Probs) != ypb.NY || p.Logits != nil {
		t.Fatalf("independent: %d probs, logits %v, err %v", len(p.Probs), p.Logits, err)
	}
	for _, v := range p.Probs {
		if !(v >= 0 && v <= 1) {
			t.Errorf("probability %v", v)
		}
	}
	// A master with no cuts (before the first subproblem) is still a valid graph.
	if _, err := freshAgent(t, Proposed, ypb).Propose(&gbd.MasterView{Prev: prev, Ypb: ypb}); err != nil {
		t.Errorf("no cuts: %v", err)
	}
}

func TestProposeRejects(t *testing.T) {
	ypb := synthesisYpb(t)
	other, err := gbd.EnumerateAdmissible(5, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := freshAgent(t, Proposed, ypb)
	good := func() *gbd.MasterView {
		cuts, prev := randomMaster(rand.New(rand.NewPCG(4, 4)), 5, 4)
		return &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	}
	for _, tc := range []struct {
		name string
		mod  func(v *gbd.MasterView)
		want string
	}{
		{"other Y_pb", func(v *gbd.MasterView) { v.Ypb = other }, "admissible set"},
		{"no Y_pb", func(v *gbd.MasterView) { v.Ypb = nil }, "no admissible set"},
		{"short prev", func(v *gbd.MasterView) { v.Prev = v.Prev[:4] }, "previous iterate has 4 values"},
		{"short coef", func(v *gbd.MasterView) { v.Cuts[2].Coef = v.Cuts[2].Coef[:3] }, "cut 2: 3 coefficients"},
		{"NaN coef", func(v *gbd.MasterView) { v.Cuts[1].Coef[0] = math.NaN() }, "cut 1: coefficient 0 is NaN"},
		{"Inf const", func(v *gbd.MasterView) { v.Cuts[0].Const = math.Inf(1) }, "cut 0: constant is +Inf"},
		{"bad kind", func(v *gbd.MasterView) { v.Cuts[3].Kind = 7 }, "cut 3: unknown kind"},
	} {
		v := good()
		tc.mod(v)
		_, err := a.Propose(v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := a.Propose(nil); err == nil {
		t.Error("nil view accepted")
	}
}

func TestCheckFits(t *testing.T) {
	ypb := synthesisYpb(t)
	a := freshAgent(t, Proposed, ypb)
	if err := a.CheckFits("synthesis", ypb); err != nil {
		t.Errorf("own family and Y_pb: %v", err)
	}
	if err := a.CheckFits("pumpstation", ypb); err == nil || !strings.Contains(err.Error(), "family") {
		t.Errorf("other family: %v", err)
	}
	other, _ := gbd.EnumerateAdmissible(5, nil, 0)
	if err := a.CheckFits("synthesis", other); err == nil || !strings.Contains(err.Error(), "admissible set differs") {
		t.Errorf("other Y_pb: %v", err)
	}
}

// TestProposeAllocs is the inference allocation budget: zero once warmed up, for both output kinds.
func TestProposeAllocs(t *testing.T) {
	ypb := synthesisYpb(t)
	cuts, prev := randomMaster(rand.New(rand.NewPCG(5, 5)), ypb.NY, 10)
	view := &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	small := &gbd.MasterView{Cuts: cuts[:3], Prev: prev, Ypb: ypb}
	for _, variant := range []Variant{Proposed, Independent} {
		a := freshAgent(t, variant, ypb)
		if _, err := a.Propose(view); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := a.Propose(view); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Propose(small); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per warmed-up Propose", variant, allocs)
		}
	}
}

// BenchmarkPropose is one agent decision on a synthesis-sized master: 5 binaries, |Y_pb| = 12, 10 cuts,
// with the paper's architecture.
func BenchmarkPropose(b *testing.B) {
	ypb := synthesisYpb(b)
	cuts, prev := randomMaster(rand.New(rand.NewPCG(6, 6)), ypb.NY, 10)
	view := &gbd.MasterView{Cuts: cuts, Prev: prev, Ypb: ypb}
	a := freshAgent(b, Proposed, ypb)
	if _, err := a.Propose(view); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a.Propose(view)
	}
}
