package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gbdmpc/gbd"
)

func testGraph(t *testing.T, rng *rand.Rand) *graph {
	cuts, prev := randomMaster(rng, 4, 5)
	var g graph
	nm := identityNorm()
	g.encode(cuts, prev, &nm, &Arch{})
	if g.ptr[g.n] == 0 {
		t.Fatal("test graph has no edges")
	}
	return &g
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestGradECC(t *testing.T) {
	for _, mean := range []bool{false, true} {
		t.Run(fmt.Sprintf("mean=%v", mean), func(t *testing.T) { testGradECC(t, mean) })
	}
}

func testGradECC(t *testing.T, mean bool) {
	rng := rand.New(rand.NewPCG(1, 1))
	g := testGraph(t, rng)
	in, out := 3, 4
	n := g.n
	h := randVec(rng, n*in, 1)
	w := randVec(rng, in*eccBlocks*out, 0.5)
	b := randVec(rng, out, 0.5)
	r := randVec(rng, n*out, 1) // L = r · hout
	p, z, hout := make([]float64, n*eccBlocks*out), make([]float64, n*out), make([]float64, n*out)
	loss := func() float64 {
		eccForward(g, g.ef, edgeFeatures, h, in, out, w, b, p, z, hout, mean)
		return dot(r, hout)
	}
	var base, cur []bool
	loss()
	base = signPattern(base, z)
	kink := func() bool { cur = signPattern(cur, z); return !samePattern(base, cur) }

	loss()
	dh := append([]float64(nil), r...)
	dw, db := make([]float64, len(w)), make([]float64, len(b))
	dp, dhin := make([]float64, n*eccBlocks*out), make([]float64, n*in)
	eccBackward(g, g.ef, edgeFeatures, in, out, w, h, z, dh, dw, db, dp, dhin, nil, nil, mean)
	checkGrad(t, "ecc.W", w, dw, loss, kink)
	checkGrad(t, "ecc.b", b, db, loss, kink)
	checkGrad(t, "ecc.h", h, dhin, loss, kink)
}

func TestGradDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	for _, act := range []bool{true, false} {
		in, out := 5, 4
		a := randVec(rng, in, 1)
		w := randVec(rng, in*out, 0.7)
		b := randVec(rng, out, 0.5)
		r := randVec(rng, out, 1)
		z, aout := make([]float64, out), make([]float64, out)
		loss := func() float64 {
			denseForward(in, out, w, b, a, z, aout, act)
			if act {
				return dot(r, aout)
			}
			return dot(r, z)
		}
		loss()
		base := signPattern(nil, z)
		var cur []bool
		kink := func() bool { cur = signPattern(cur, z); return act && !samePattern(base, cur) }
		loss()
		dz := append([]float64(nil), r...)
		dw, db, da := make([]float64, len(w)), make([]float64, out), make([]float64, in)
		denseBackward(in, out, w, a, z, dz, dw, db, da, act)
		name := "linear"
		if act {
			name = "relu"
		}
		checkGrad(t, name+".W", w, dw, loss, kink)
		checkGrad(t, name+".b", b, db, loss, kink)
		checkGrad(t, name+".a", a, da, loss, kink)
	}
}

// TestGradPooling: both readouts' backward passes against finite differences of r·pool(h). Max
// pooling is not differentiable where the argmax changes; those probes are skipped.
func TestGradPooling(t *testing.T) {
	const n, width = 6, 3
	for _, c := range []struct {
		name     string
		seed     uint64
		forward  func(h, pooled []float64, arg []int32)
		backward func(r []float64, arg []int32, dh []float64)
	}{
		{"pool", 1,
			func(h, pooled []float64, _ []int32) { sumPool(n, width, h, pooled) },
			func(r []float64, _ []int32, dh []float64) { sumPoolBackward(n, width, r, dh) }},
		{"maxpool", 2,
			func(h, pooled []float64, arg []int32) { maxPool(n, width, h, pooled, arg) },
			func(r []float64, arg []int32, dh []float64) { maxPoolBackward(width, r, arg, dh) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, c.seed))
			h := randVec(rng, n*width, 1)
			r := randVec(rng, width, 1)
			pooled, arg := make([]float64, width), make([]int32, width)
			loss := func() float64 { c.forward(h, pooled, arg); return dot(r, pooled) }
			loss()
			base := slices.Clone(arg)
			kink := func() bool { return !slices.Equal(arg, base) } // the argmax changed
			dh := make([]float64, n*width)
			c.backward(r, arg, dh)
			checkGrad(t, c.name+".h", h, dh, loss, kink)
		})
	}
}

func TestGradLosses(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 1))
	np := 12
	logits := randVec(rng, np, 3)
	d := make([]float64, np)
	scratch := make([]float64, np)

	crossEntropy(logits, 7, d)
	checkGrad(t, "CE", logits, append([]float64(nil), d...), func() float64 { return crossEntropy(logits, 7, scratch) }, nil)

	s := randVec(rng, np, 2)
	for i := range s {
		s[i] = math.Abs(s[i])
	}
	adj := make([]float64, np)
	feasibilityCE(logits, s, 0.1, 3, d, adj)
	checkGrad(t, "feasCE", logits, append([]float64(nil), d...), func() float64 { return feasibilityCE(logits, s, 0.1, 3, scratch, adj) }, nil)

	z := randVec(rng, 5, 3)
	bits := []uint8{1, 0, 0, 1, 1}
	binaryCE(z, bits, d)
	checkGrad(t, "BCE", z, append([]float64(nil), d[:5]...), func() float64 { return binaryCE(z, bits, scratch) }, nil)

	// The structured agent's stage 2: two violated feasibility cuts at σ(z) (one with a
	// coefficient where the other has none), one satisfied, and an optimality cut the penalty ignores.
	cuts := []gbd.Cut{
		{Kind: gbd.FeasibilityCut, Coef: []float64{2, -1, 0, 3, 1}, Const: -0.5},
		{Kind: gbd.FeasibilityCut, Coef: []float64{0, 4, 1, -2, 0}, Const: 0.2},
		{Kind: gbd.FeasibilityCut, Coef: []float64{1, 1, 1, 1, 1}, Const: -100},
		{Kind: gbd.OptimalityCut, Coef: []float64{9, 9, 9, 9, 9}, Const: 50},
	}
	p := make([]float64, 5)
	feasibilityBCE(z, bits, cuts, 0.7, d, p)
	penalty := feasibilityBCE(z, bits, cuts, 0.7, scratch, p) - binaryCE(z, bits, scratch)
	if !(penalty > 0) {
		t.Fatalf("feasBCE: the violated cuts add %v, want a positive penalty", penalty)
	}
	checkGrad(t, "feasBCE", z, append([]float64(nil), d[:5]...), func() float64 { return feasibilityBCE(z, bits, cuts, 0.7, scratch, p) }, nil)
}

// TestLossValues pins the losses to direct formulas, including logits large enough to overflow a naive
// softmax.
func TestLossValues(t *testing.T) {
	d := make([]float64, 3)
	got := crossEntropy([]float64{1000, 1001, 999}, 0, d)
	want := 1 + math.Log(1+math.Exp(-1)+math.Exp(-2))
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("CE = %v, want %v", got, want)
	}
	adj := make([]float64, 3)
	got = feasibilityCE([]float64{0, 0, 0}, []float64{0, 10, 20}, 0.1, 0, d, adj)
	want = math.Log(1 + math.Exp(-1) + math.Exp(-2))
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("feasibility CE = %v, want %v", got, want)
	}
	got = binaryCE([]float64{800, -800}, []uint8{1, 0}, d)
	if math.Abs(got) > 1e-12 || math.IsNaN(got) {
		t.Errorf("BCE of confident correct outputs = %v, want 0", got)
	}
	got = binaryCE([]float64{0}, []uint8{1}, d)
	if math.Abs(got-math.Ln2) > 1e-12 {
		t.Errorf("BCE at z=0 = %v, want ln 2", got)
	}
}

func TestInfeasibilityScores(t *testing.T) {
	ypb := synthesisYpb(t)
	rng := rand.New(rand.NewPCG(5, 1))
	cuts, _ := randomMaster(rng, ypb.NY, 12)
	ymat := ypbMatrix(ypb)
	s := make([]float64, ypb.Count())
	infeasibility(cuts, ymat, ypb.NY, s, nil, nil)
	y := make([]float64, ypb.NY)
	for j := range s {
		ypb.Float(j, y)
		want := 0.0
		for k := range cuts {
			if cuts[k].Kind == gbd.FeasibilityCut {
				want += math.Max(0, cuts[k].Eval(y))
			}
		}
		if math.Abs(s[j]-want) > 1e-12*(1+want) {
			t.Errorf("s[%d] = %v, want %v", j, s[j], want)
		}
	}
}

// TestGradNetwork checks every parameter of a small network on a random graph, for the logits head with
// cross-entropy, the logits head with the feasibility-adjusted loss (head parameters only, as stage 2
// trains them) and the independent head with binary cross-entropy.
func TestGradNetwork(t *testing.T) {
	ypb := synthesisYpb(t)
	rng := rand.New(rand.NewPCG(6, 1))
	cuts, prev := randomMaster(rng, ypb.NY, 6)
	var g graph
	nm := FitNorm([]Sample{{Cuts: cuts}}, Arch{})
	g.encode(cuts, prev, &nm, &Arch{})
	s := make([]float64, ypb.Count())
	infeasibility(cuts, ypbMatrix(ypb), ypb.NY, s, nil, nil)

	for _, arch := range []Arch{{ECC: []int{6, 5}, Dense: []int{7}}, {ECC: []int{6, 5}, Dense: []int{7}, Pool: PoolSumMax, Aggr: AggrMean},
		{ECC: []int{6, 5}, Dense: []int{7}, Kernel: 3},
		{ECC: []int{6, 5}, Dense: []int{7}, Pool: PoolSumMax, PoolAll: true},
		{ECC: []int{6, 5}, Dense: []int{7}, Pool: PoolSumMax, PerNode: true},
		{ECC: []int{6, 5}, Dense: []int{}, PerNode: true}} {
		for _, tc := range []struct {
			name     string
			variant  Variant
			headOnly bool
		}{
			{"CE", Baseline, false},
			{"feasCE", Proposed, true},
			{"BCE", Independent, false},
			{"feasBCE", Structured, true},
		} {
			if perBinary := tc.variant == Independent || tc.variant == Structured; arch.PerNode && !perBinary || tc.variant == Structured && !arch.PerNode {
				continue // a per-node head has one output per binary; the structured head is the BCE one's
			}
			t.Run(fmt.Sprintf("%s/pool=%s/all=%v/aggr=%s/kernel=%d/pernode=%v", tc.name, arch.Pool, arch.PoolAll, arch.Aggr, arch.Kernel, arch.PerNode), func(t *testing.T) {
				build := tc.variant
				if build == Structured {
					build = Independent // the same network; the structured agent's decoder needs a staged Y_pb
				}
				a, err := newAgent(build, arch, "fd", ypb, nm, rand.New(rand.NewPCG(7, 1)))
				if err != nil {
					t.Fatal(err)
				}
				nw := &a.net
				ws := newWorkspace(nw.lay)
				nout := nw.lay.nout
				d := make([]float64, nout)
				scratch := make([]float64, nout)
				adj := make([]float64, nout)
				label := 4
				lossOf := func(out, d []float64) float64 {
					switch tc.variant {
					case Independent:
						return binaryCE(out, ypb.At(label), d)
					case Structured:
						return feasibilityBCE(out, ypb.At(label), cuts, 0.1, d, adj)
					case Proposed:
						return feasibilityCE(out, s, 0.1, label, d, adj)
					}
					return crossEntropy(out, label, d)
				}
				loss := func() float64 { return lossOf(nw.forward(&g, ws), scratch) }
				// The activation pattern covers every ReLU: the ECC layers and the hidden dense layers.
				pattern := func(dst []bool) []bool {
					return append(append(signPattern(dst, ws.z...), signPattern(nil, ws.pre[:len(ws.pre)-1]...)...), signPattern(nil, ws.kpre...)...)
				}
				loss()
				base, baseArg := pattern(nil), fmt.Sprint(ws.argmax)
				var cur []bool
				// A kink is a ReLU changing side or a channel's maximum moving to another node.
				kink := func() bool { cur = pattern(cur); return !samePattern(base, cur) || fmt.Sprint(ws.argmax) != baseArg }

				out := nw.forward(&g, ws)
				lossOf(out, d)
				grad := make([]float64, nw.lay.size)
				if tc.headOnly {
					nw.backwardHead(ws, d, grad, false)
					for k := 0; k < nw.lay.head; k++ {
						if grad[k] != 0 {
							t.Fatalf("head-only backward touched graph parameter %d", k)
						}
					}
					checkGrad(t, "head", nw.p[nw.lay.head:], grad[nw.lay.head:], loss, kink)
					return
				}
				nw.backward(&g, ws, d, grad)
				for _, tt := range nw.lay.all {
					checkGrad(t, tt.name, nw.lay.view(nw.p, tt), nw.lay.view(grad, tt), loss, kink)
				}
			})
		}
	}
}
