package telemetry

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"gbdmpc/gbd"
)

// TestMasterCodecRoundTrip: a master problem written by MasterRecordOf, through JSON and
// Validate, reads back as the same cuts (a carried cut with Iter −1), previous iterate, Y_pb
// signature and proposal; the record owns copies, so changing the engine's slices afterwards
// changes nothing.
func TestMasterCodecRoundTrip(t *testing.T) {
	ypb, err := gbd.EnumerateAdmissible(3, []gbd.PureRow{{Idx: []int{0, 1, 2}, Coef: []float64{1, 1, 1}, RHS: 2}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []gbd.Cut{
		{Kind: gbd.OptimalityCut, Coef: []float64{1, -2, 0.5}, Const: 3, Iter: 0},
		{Kind: gbd.FeasibilityCut, Coef: []float64{0, 1, -1}, Const: -0.25, Iter: 1},
		{Kind: gbd.OptimalityCut, Coef: []float64{2, 0, 0}, Const: 1, Iter: 4, Carried: true},
	}
	// The first cut carries the problem's hinges: the log says so, and GBDCuts gives them back.
	hs := &gbd.Hinges{Terms: []gbd.Hinge{{Weight: 1, Idx: []int{1, 0}, Coef: []float64{1, -1}}}}
	cuts[0].Hinges = hs
	view := &gbd.MasterView{Cuts: cuts, Prev: []float64{1, 0, 1}, Ypb: ypb}
	it := &gbd.Iteration{K: 2, Tk: 50 * time.Millisecond, LBD: 1, UBD: 4, Master: gbd.MasterOptimal,
		MasterY: []float64{0, 1, 0}, MasterMu: 1.5, MasterBound: 1.5, Next: []float64{0, 1, 0},
		Proposal: 2, Outcome: gbd.OutcomeAccepted}
	m := MasterRecordOf(view, it, json.RawMessage(`{"v":1}`))
	cuts[0].Coef[0] = 99 // the engine reuses its slices
	view.Prev[0] = 7

	rec := &Record{V: SchemaVersion, Type: TypeMaster, TSms: 1, Plant: "p", Family: "synthesis", Master: m}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	bm := back.Master
	want := []gbd.Cut{
		{Kind: gbd.OptimalityCut, Coef: []float64{1, -2, 0.5}, Const: 3, Iter: 0},
		{Kind: gbd.FeasibilityCut, Coef: []float64{0, 1, -1}, Const: -0.25, Iter: 1},
		{Kind: gbd.OptimalityCut, Coef: []float64{2, 0, 0}, Const: 1, Iter: -1, Carried: true},
	}
	if got := bm.GBDCuts(false, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("cuts %+v, want %+v", got, want)
	}
	if !bm.Cuts[0].Hinges || bm.Cuts[1].Hinges || bm.Cuts[2].Hinges {
		t.Errorf("hinges flags %v %v %v, want the first cut's only", bm.Cuts[0].Hinges, bm.Cuts[1].Hinges, bm.Cuts[2].Hinges)
	}
	want[0].Hinges = hs
	if got := bm.GBDCuts(false, hs); !reflect.DeepEqual(got, want) {
		t.Errorf("cuts with the hinges %+v, want %+v", got, want)
	}
	if got := bm.GBDCuts(true, nil); len(got) != 1 || !got[0].Carried {
		t.Errorf("carried %+v", got)
	}
	if !reflect.DeepEqual(bm.Prev, []float64{1, 0, 1}) || bm.NY != 3 || bm.YpbSignature != ypb.Signature || bm.YpbCount != ypb.Count() {
		t.Errorf("prev %v, ny %d, signature %q count %d", bm.Prev, bm.NY, bm.YpbSignature, bm.YpbCount)
	}
	if p := bm.Proposal; p == nil || p.Index != 2 || p.Outcome != gbd.OutcomeAccepted || !reflect.DeepEqual(p.Y, ypb.Float(2, make([]float64, 3))) {
		t.Errorf("proposal %+v", bm.Proposal)
	}
	if bm.MasterStatus != "optimal" || float64(bm.TkSeconds) != 0.05 || bm.Iter != 2 {
		t.Errorf("master status %q, tk %v, iter %d", bm.MasterStatus, bm.TkSeconds, bm.Iter)
	}
}
