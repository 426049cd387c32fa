package policy

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gbdmpc/gbd"
)

// TestCutNormMasterInvariance: under CutNormMaster the encoding of a master does not change when all
// its optimality cuts are shifted and scaled together, or a feasibility cut is scaled alone: the
// transformations that leave the master's argmin unchanged; with CutAtPrev too.
func TestCutNormMasterInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 1))
	for trial := range 40 {
		arch := Arch{CutNorm: CutNormMaster, CutAtPrev: trial%2 == 1}
		cuts, prev := randomMaster(rng, 5, 2+rng.IntN(10))
		nm := FitNorm([]Sample{{Cuts: cuts, Prev: prev}}, arch)
		var g, h graph
		g.encode(cuts, prev, &nm, &arch)
		s, shift := 0.1+10*rng.Float64(), 100*(rng.Float64()-0.5)
		moved := make([]gbd.Cut, len(cuts))
		for k, c := range cuts {
			f := s
			if c.Kind == gbd.FeasibilityCut {
				f = 0.01 + 50*rng.Float64()
			}
			moved[k] = gbd.Cut{Kind: c.Kind, Coef: make([]float64, len(c.Coef)), Const: f * c.Const}
			for i, a := range c.Coef {
				moved[k].Coef[i] = f * a
			}
			if c.Kind == gbd.OptimalityCut {
				moved[k].Const += shift
			}
		}
		h.encode(moved, prev, &nm, &arch)
		for i := range g.x {
			if math.Abs(g.x[i]-h.x[i]) > 1e-9*math.Max(1, math.Abs(g.x[i])) {
				t.Fatalf("trial %d: node feature %d: %v, after the transformation %v", trial, i, g.x[i], h.x[i])
			}
		}
		for i := range g.ef {
			if math.Abs(g.ef[i]-h.ef[i]) > 1e-9*math.Max(1, math.Abs(g.ef[i])) {
				t.Fatalf("trial %d: edge feature %d: %v, after the transformation %v", trial, i, g.ef[i], h.ef[i])
			}
		}
	}
}

// TestCutNormKindIsV1: the default normalisation encodes exactly as before the option existed, so
// old policy files propose what they did.
func TestCutNormKindIsV1(t *testing.T) {
	rng := rand.New(rand.NewPCG(62, 1))
	cuts, prev := randomMaster(rng, 5, 8)
	nm := Norm{RHSMean: [2]float64{1, -2}, RHSStd: [2]float64{3, 0.5}, CoefMean: [2]float64{0.2, -1}, CoefStd: [2]float64{2, 4}}
	var g graph
	g.encode(cuts, prev, &nm, &Arch{})
	for k, c := range cuts {
		t0 := c.Kind & 1
		if got, want := g.x[(5+k)*baseFeatures+featRHS], (c.RHS()-nm.RHSMean[t0])/nm.RHSStd[t0]; got != want {
			t.Fatalf("cut %d: RHS feature %v, want %v", k, got, want)
		}
	}
}

// TestCutNormMasterRoundTrip trains with CutNormMaster and checks the file keeps it.
func TestCutNormMasterRoundTrip(t *testing.T) {
	ds := synthTask(rand.New(rand.NewPCG(63, 1)), synthesisYpb(t), 3, 4)
	a, err := Train(context.Background(), ds, TrainConfig{Arch: Arch{ECC: []int{3, 2}, Dense: []int{4}, CutNorm: CutNormMaster},
		Stage1: StageConfig{Epochs: 1}, Stage2: StageConfig{Epochs: 1}, Now: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := a.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if b.Arch().CutNorm != CutNormMaster || b.Version() != a.Version() {
		t.Fatalf("loaded arch %+v version %s, saved %+v %s", b.Arch(), b.Version(), a.Arch(), a.Version())
	}
	view := &gbd.MasterView{Cuts: ds.Samples[0].Cuts, Prev: ds.Samples[0].Prev, Ypb: ds.Ypb}
	pa, _ := a.Propose(view)
	pa0 := append([]float64(nil), pa.Logits...)
	pb, _ := b.Propose(view)
	for j := range pa0 {
		if pa0[j] != pb.Logits[j] {
			t.Fatalf("logit %d: %v before saving, %v after", j, pa0[j], pb.Logits[j])
		}
	}
	if _, err := Train(context.Background(), ds, TrainConfig{Arch: Arch{CutNorm: "global"}}); err == nil {
		t.Error("an unknown cut normalisation was accepted")
	}
}

// TestCutAtPrev: a cut node's last feature is its value at the previous iterate, an optimality
// cut's measured from the envelope there (0 for the active one), in the cut's scale, clipped.
func TestCutAtPrev(t *testing.T) {
	cuts := []gbd.Cut{
		{Kind: gbd.OptimalityCut, Coef: []float64{2, 0, -1}, Const: -2},  // 2−1−2 = −1 at prev
		{Kind: gbd.OptimalityCut, Coef: []float64{0, 1, 1}, Const: 1},    // 1+1 = 2 at prev: active
		{Kind: gbd.FeasibilityCut, Coef: []float64{0, 3, 0}, Const: -1},  // −1 at prev
		{Kind: gbd.OptimalityCut, Coef: []float64{0, 0, 0}, Const: -1e6}, // far below: clipped
	}
	prev := []float64{1, 0, 1}
	nm := identityNorm()
	arch := Arch{CutAtPrev: true}
	var g graph
	g.encode(cuts, prev, &nm, &arch)
	if g.nf != baseFeatures+1 {
		t.Fatalf("node width %d, want %d", g.nf, baseFeatures+1)
	}
	for k, want := range []float64{-3, 0, -1, -cutAtPrevClip} {
		if got := g.x[(3+k)*g.nf+g.nf-1]; math.Abs(got-want) > 1e-12 {
			t.Errorf("cut %d: value at prev %v, want %v", k, got, want)
		}
	}
	for i := range 3 {
		if v := g.x[i*g.nf+g.nf-1]; v != 0 {
			t.Errorf("variable node %d carries %v in the cut column", i, v)
		}
	}
}
