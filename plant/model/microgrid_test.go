package model

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/master/cbc"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/knob"
)

var microgridFile = filepath.Join("..", "..", "configs", "models", "microgrid.yaml")

// TestMicrogridGroundTruth: on seeded instances of configs/models/microgrid.yaml (4; 1 under
// -short; GBDMPC_GROUND_TRUTH_INSTANCES=50 for the 50, about 3 minutes), classical GBD with master auto (enum here) and with the staged master finds the
// brute-force optimum (every admissible on/off plan's NLP solved) to 1e-6 relative, with valid
// cuts; the exclusive and minimum up/down rules hold in the optimum.
func TestMicrogridGroundTruth(t *testing.T) {
	fam, err := Load(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	ypb := fam.Admissible()
	if ypb.Stages == nil {
		t.Fatal("the microgrid's rules span at most three blocks, so Y_pb should be staged")
	}
	n := knob.Env(t, "GBDMPC_GROUND_TRUTH_INSTANCES", knob.Size(4, 1), 1)
	auto, name, err := backend.MasterFor(backend.AutoMasterName, ypb)
	if err != nil || name != "enum" {
		t.Fatalf("master auto on |Y_pb| = %d: %s, %v; want enum", ypb.Count(), name, err)
	}
	agree := 0
	m := fam.Model()
	rng := rand.New(rand.NewPCG(37, 5))
	for i := range n {
		in := m.Sample(rng)
		mm, err := fam.DecodeMeasurement(m.MarshalInstance(&in))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := mm.Problem()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		gt, err := gbd.SolveByEnumeration(p, ypb, nil, gbd.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		if !gt.Feasible {
			t.Fatalf("instance %d infeasible; a battery left idle and the grid always serve", i)
		}
		ok := true
		for _, master := range []gbd.Master{auto(), &staged.Master{}} {
			r, err := (&gbd.Engine{Master: master}).Solve(p, ypb, gbd.Settings{Eps: 1e-7 * math.Max(1, math.Abs(gt.Objective))})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != gbd.StatusOptimal || r.Y == nil || math.Abs(r.Objective-gt.Objective) > 1e-6*math.Max(1, math.Abs(gt.Objective)) {
				t.Errorf("instance %d, %T: %v objective %.9g, brute force %.9g", i, master, r.Status, r.Objective, gt.Objective)
				ok = false
				continue
			}
			for _, cut := range r.Cuts {
				if cut.Kind == gbd.OptimalityCut && cut.Eval(gt.Y) > gt.Objective+1e-6*(1+math.Abs(gt.Objective)) {
					t.Errorf("instance %d: optimality cut of iteration %d above the optimum", i, cut.Iter)
				}
			}
		}
		if ok {
			agree++
		}
		t.Logf("instance %d: optimum %.4f € at y=%v (|Y_pb| = %d)", i, gt.Objective, gt.Y, ypb.Count())
	}
	t.Logf("microgrid ground truth: %d/%d instances agree with brute force (%d on/off plans each)", agree, n, ypb.Count())
}

// microgridRules are the microgrid's rules written directly: never charging and discharging in
// one block; the genset, once started in a block b ≥ 1, runs in block b+1 too, and once stopped
// there, rests in block b+1 too.
func microgridRules(y []float64, nb int) bool {
	for b := range nb {
		if y[b] > 0.5 && y[nb+b] > 0.5 {
			return false
		}
	}
	g := y[2*nb:]
	for b := 1; b+1 < nb; b++ {
		if g[b] > g[b-1] && g[b+1] < 0.5 || g[b] < g[b-1] && g[b+1] > 0.5 {
			return false
		}
	}
	return true
}

// The model's pure rows admit exactly the on/off plans the rules allow: all 2^12 checked.
func TestMicrogridAdmissible(t *testing.T) {
	fam, err := Load(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	ypb, nb := fam.Admissible(), fam.Model().Blocks
	count := 0
	y := make([]float64, ypb.NY)
	for mask := range 1 << ypb.NY {
		for i := range y {
			y[i] = float64(mask >> i & 1)
		}
		want := microgridRules(y, nb)
		if want {
			count++
		}
		if got := ypb.Contains(y); got != want {
			t.Fatalf("y=%v: admissible %v, rules say %v", y, got, want)
		}
	}
	if count != ypb.Count() {
		t.Errorf("rules allow %d plans, Y_pb has %d", count, ypb.Count())
	}
}

// With one-hour blocks the microgrid has 36 binaries and a Y_pb too large to enumerate: it stays
// implicit but staged, and the staged master (branch and bound over the blocks) and CBC agree.
func TestMicrogridImplicitStaged(t *testing.T) {
	if testing.Short() {
		t.Skip("two 36-binary solves")
	}
	data, err := os.ReadFile(microgridFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse("microgrid-hourly.yaml", bytes.Replace(data, []byte("\nblocks: 4"), []byte("\nblocks: 12"), 1))
	if err != nil {
		t.Fatal(err)
	}
	fam, err := NewFamily(m)
	if err != nil {
		t.Fatal(err)
	}
	ypb := fam.Admissible()
	if !ypb.Implicit() || ypb.NY != 36 || len(ypb.Stages) != 12 {
		t.Fatalf("Y_pb: implicit %v, %d binaries, %d stages", ypb.Implicit(), ypb.NY, len(ypb.Stages))
	}
	in := m.Sample(rand.New(rand.NewPCG(37, 36)))
	mm, err := fam.DecodeMeasurement(m.MarshalInstance(&in))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := mm.Problem()
	var obj []float64
	for _, master := range []gbd.Master{&staged.Master{}, &cbc.Master{}} {
		r, err := (&gbd.Engine{Master: master}).Solve(p, ypb, gbd.Settings{Eps: 1e-7})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != gbd.StatusOptimal || !ypb.Contains(r.Y) {
			t.Fatalf("%T: %v, y admissible %v", master, r.Status, ypb.Contains(r.Y))
		}
		obj = append(obj, r.Objective)
	}
	if math.Abs(obj[0]-obj[1]) > 1e-6*math.Max(1, math.Abs(obj[1])) {
		t.Errorf("staged %.9g, cbc %.9g", obj[0], obj[1])
	}
}
