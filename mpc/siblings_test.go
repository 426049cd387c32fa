package mpc_test

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// TestSiblingsWarmAColdStep: a plant's first step borrows the cuts of sibling stations (same
// family and shape, other measurements up to an hour apart) and returns the same optimum as a cold
// first step, in fewer GBD iterations; its own next step carries its own cuts, none borrowed.
func TestSiblingsWarmAColdStep(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, prof := fam.Config(), pumpstation.DefaultProfile()
	measure := func(seed uint64, hour float64) mpc.Measurement {
		m, err := fam.Measure(pumpstation.SampleAt(rand.New(rand.NewPCG(seed, 1)), &c, &prof, hour))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	set := gbd.Settings{Eps: 1e-7}
	// Every step's pool is offered (the test's steps are milliseconds apart), so each first step
	// borrows the newest snapshots: the lender's and those of the plants that borrowed before it.
	sib := &mpc.Siblings{Refresh: time.Nanosecond}
	lender, err := mpc.NewController(fam, mpc.Options{Settings: set, Siblings: sib})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := lender.Step(measure(100, 6), time.Time{}); err != nil || d.Status != mpc.StatusOptimal || d.Carry.Borrowed != 0 {
		t.Fatalf("the first plant's first step: %v %s, %d borrowed (nothing to borrow yet)", err, d.Status, d.Carry.Borrowed)
	}
	itCold, itWarm := 0, 0
	for k := range 8 {
		m := measure(uint64(k+1), 6+float64(k)/8)
		cold, err := mpc.NewController(fam, mpc.Options{Settings: set})
		if err != nil {
			t.Fatal(err)
		}
		warm, err := mpc.NewController(fam, mpc.Options{Settings: set, Siblings: sib})
		if err != nil {
			t.Fatal(err)
		}
		dc, err := cold.Step(m, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		dw, err := warm.Step(m, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if dc.Status != mpc.StatusOptimal || dw.Status != mpc.StatusOptimal {
			t.Fatalf("instance %d: cold %s, borrowing %s", k, dc.Status, dw.Status)
		}
		if dw.Carry.Borrowed == 0 || dw.Carry.Borrowed > dw.Carry.Carried || dc.Carry.Borrowed != 0 {
			t.Errorf("instance %d: borrowing step carried %d (%d borrowed), cold step %d borrowed", k, dw.Carry.Carried,
				dw.Carry.Borrowed, dc.Carry.Borrowed)
		}
		if math.Abs(dc.Objective-dw.Objective) > 1e-6*(1+math.Abs(dc.Objective)) {
			t.Errorf("instance %d: cold optimum %.9g, with borrowed cuts %.9g", k, dc.Objective, dw.Objective)
		}
		itCold += dc.Iterations
		itWarm += dw.Iterations
		d2, err := warm.Step(measure(uint64(k+1), 6.25+float64(k)/8), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d2.Carry.Borrowed != 0 || d2.Carry.Carried == 0 {
			t.Errorf("instance %d: second step carried %d, %d of them borrowed; want its own cuts only", k, d2.Carry.Carried, d2.Carry.Borrowed)
		}
	}
	t.Logf("8 first steps: %d GBD iterations cold, %d with a sibling's cuts", itCold, itWarm)
	if itWarm >= itCold {
		t.Errorf("borrowed cuts did not save iterations: %d cold, %d borrowing", itCold, itWarm)
	}
}

// TestSiblingsConcurrent: many controllers lend and borrow through one Siblings at once (run
// with -race), each reaching an optimum.
func TestSiblingsConcurrent(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, prof := fam.Config(), pumpstation.DefaultProfile()
	sib := &mpc.Siblings{Refresh: time.Nanosecond} // every step replaces the snapshot
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			ctl, err := mpc.NewController(fam, mpc.Options{Siblings: sib, CarryWorkers: 1})
			if err != nil {
				t.Error(err)
				return
			}
			for k := range 3 {
				m, err := fam.Measure(pumpstation.SampleAt(rand.New(rand.NewPCG(uint64(i), uint64(k))), &c, &prof, 12+float64(k)/4))
				if err != nil {
					t.Error(err)
					return
				}
				if d, err := ctl.Step(m, time.Time{}); err != nil || d.Status != mpc.StatusOptimal {
					t.Errorf("plant %d step %d: %v %s", i, k, err, d.Status)
				}
			}
		})
	}
	wg.Wait()
	t.Log(sib)
}
