package mpc_test

import (
	"math"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
)

// kindLog records which problem each solve's masters belong to (mpc.KindRecorder).
type kindLog struct {
	kinds   []mpc.ProblemKind
	masters map[mpc.ProblemKind]int
	current mpc.ProblemKind
}

func (k *kindLog) SolvingKind(kind mpc.ProblemKind) {
	k.kinds = append(k.kinds, kind)
	k.current = kind
}

func (k *kindLog) RecordMaster(*gbd.MasterView, *gbd.Iteration) { k.masters[k.current]++ }

// TestPumpStationRelaxedSteps runs the pump station through a shortfall: a servable step, the
// issue's capacity shortfall (proven by the pre-check: soft solve only), a forecast only the move
// blocking makes unservable (proven by the hard GBD solve, then the soft one), and a servable step
// again. Each kind of problem carries only its own cuts: the first soft solve is offered none, the
// second the first's, and the last hard solve exactly the cuts of the hard solves before it.
func TestPumpStationRelaxedSteps(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := fam.Config()
	log := &kindLog{masters: map[mpc.ProblemKind]int{}}
	ctl, err := mpc.NewController(fam, mpc.Options{Recorder: log})
	if err != nil {
		t.Fatal(err)
	}
	trap := testsupport.PumpInstance(&c, 4.99, 100)
	trap.Demand[0] = 0
	for t := 1; t < c.BlockLen(); t++ {
		trap.Demand[t] = 300
	}
	steps := []struct {
		name  string
		in    pumpstation.Instance
		proof string // "" not relaxed
		kinds []mpc.ProblemKind
	}{
		{"servable", testsupport.PumpInstance(&c, 3, 120), "", []mpc.ProblemKind{mpc.Hard}},
		{"shortfall", testsupport.PumpInstance(&c, 3, 300), mpc.ProofPrecheck, []mpc.ProblemKind{mpc.Soft}},
		{"block trap", trap, mpc.ProofGBD, []mpc.ProblemKind{mpc.Hard, mpc.Soft}},
		{"servable again", testsupport.PumpInstance(&c, 3, 120), "", []mpc.ProblemKind{mpc.Hard}},
	}
	hardCuts := 0
	softCuts := 0
	for i, st := range steps {
		m, err := fam.Measure(st.in)
		if err != nil {
			t.Fatal(err)
		}
		log.kinds = nil
		d, err := ctl.Step(m, time.Now().Add(time.Minute))
		if err != nil || d.Status == mpc.StatusFallback {
			t.Fatalf("%s: %v, %s (%s)", st.name, err, d.Status, d.Reason)
		}
		if len(log.kinds) != len(st.kinds) || (len(st.kinds) == 2 && log.kinds[1] != mpc.Soft) || log.kinds[0] != st.kinds[0] {
			t.Errorf("%s: solved %v, want %v", st.name, log.kinds, st.kinds)
		}
		switch {
		case st.proof == "" && d.Relaxed != nil:
			t.Errorf("%s: relaxed %+v", st.name, d.Relaxed)
		case st.proof != "" && (d.Relaxed == nil || d.Relaxed.Proof != st.proof || d.Kind != mpc.Soft):
			t.Errorf("%s: relaxed %+v, kind %v, want proof %q", st.name, d.Relaxed, d.Kind, st.proof)
		}
		// What each solve was offered: the pooled cuts of its own kind.
		wantPooled := map[int]int{0: 0, 1: softCuts, 2: hardCuts + softCuts, 3: hardCuts}[i]
		if d.Carry.Pooled != wantPooled {
			t.Errorf("%s: %d cuts pooled for carrying, want %d (hard pool %d, soft pool %d)", st.name, d.Carry.Pooled, wantPooled, hardCuts, softCuts)
		}
		for _, r := range []*gbd.Result{d.Hard, d.Soft} {
			if r == nil {
				continue
			}
			n := 0
			for _, du := range r.Duals {
				if du != nil {
					n++
				}
			}
			if r == d.Soft {
				softCuts += n
			} else {
				hardCuts += n
			}
		}
		if d.Relaxed != nil {
			if d.Hard != nil && d.Hard.Status != gbd.StatusInfeasible {
				t.Errorf("%s: hard solve ended %s", st.name, d.Hard.Status)
			}
			if d.Relaxed.Limit == "" || d.Relaxed.MaxViolation <= 0 || d.Relaxed.Shortfall == "" {
				t.Errorf("%s: relaxation %+v", st.name, d.Relaxed)
			}
			t.Logf("%s: %s [%s], %d iterations, objective %.6g", st.name, d.Relaxed.Shortfall, d.Relaxed.Proof, d.Iterations, d.Objective)
		}
	}
	if log.masters[mpc.Soft] == 0 || log.masters[mpc.Hard] == 0 {
		t.Errorf("masters recorded by kind: %v", log.masters)
	}
}

// TestSynthesisInfeasibleStaysInfeasible: a family without a soft version (synthesis) reports an
// infeasible instance as such; nothing is relaxed and the controller falls back.
func TestSynthesisInfeasibleStaysInfeasible(t *testing.T) {
	fam := synthesis.NewFamily()
	m, err := fam.DecodeMeasurement([]byte(`{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[0.2,0.3]}`))
	if err != nil {
		t.Fatal(err)
	}
	eng := gbd.Engine{Master: &enum.Master{}}
	out, err := mpc.Solve(m, gbd.Settings{}, mpc.DefaultHardFrac, nil, func(k mpc.ProblemKind, p *gbd.Problem, set gbd.Settings) (*gbd.Result, error) {
		if k != mpc.Hard {
			t.Errorf("a %v problem was solved", k)
		}
		return eng.Solve(p, fam.Admissible(), set)
	})
	if err != nil || out.Result.Status != gbd.StatusInfeasible || out.Relaxed != nil || out.Soft != nil || out.Infeasible != "" {
		t.Fatalf("%v, %+v", err, out)
	}
	ctl, err := mpc.NewController(fam, mpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctl.Step(m, time.Now().Add(time.Minute))
	if err != nil || d.Status != mpc.StatusFallback || d.Relaxed != nil || !math.IsInf(d.Objective, 1) {
		t.Errorf("controller: %v, %+v", err, d)
	}
}
