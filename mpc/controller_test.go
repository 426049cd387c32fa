package mpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/backend"
	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/master/staged"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/fault"
)

// toy is a two-binary family: min (x − a)² + y1 + 2·y2 s.t. x ≤ 10·(y1 + y2), y1 + y2 ≤ 1, with
// x ∈ [0, 10]. With a > ~1 running y1 pays off. Its plans count their shifts and run out after
// three.
type toy struct{ ypb *gbd.Admissible }

func newToy(t *testing.T) *toy {
	a, err := gbd.EnumerateAdmissible(2, []gbd.PureRow{{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &toy{ypb: a}
}

func (f *toy) Name() string                { return "toy" }
func (f *toy) Admissible() *gbd.Admissible { return f.ypb }
func (f *toy) SafeAction() Action          { return json.RawMessage(`"safe"`) }
func (f *toy) DecodeMeasurement(b []byte) (Measurement, error) {
	var a float64
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	return toyMeas(a), nil
}
func (f *toy) PlanFrom(m Measurement, r *gbd.Result) (Plan, error) {
	switch m.(type) {
	case toyMeas, softToy:
	default:
		return nil, errors.New("not a toy measurement")
	}
	return &toyPlan{y: r.Y, x: r.X}, nil
}

type toyMeas float64

func (m toyMeas) Instance() json.RawMessage { return json.RawMessage(fmt.Sprint(float64(m))) }
func (m toyMeas) Problem() (*gbd.Problem, error) {
	return &gbd.Problem{
		Name: "toy", NX: 1, XLo: []float64{0}, XHi: []float64{10}, NY: 2,
		Objective: gbd.Expr{
			Terms: []gbd.Term{{Weight: 1, Atom: gbd.AtomSquare, Idx: []int{0}, Coef: []float64{1}, Shift: -float64(m)}},
			YIdx:  []int{0, 1}, YCoef: []float64{1, 2},
		},
		Ineq: []gbd.Expr{{Idx: []int{0}, Coef: []float64{1}, YIdx: []int{0, 1}, YCoef: []float64{-10, -10}}},
		Pure: []gbd.PureRow{{Idx: []int{0, 1}, Coef: []float64{1, 1}, RHS: 1}},
	}, nil
}

type toyPlan struct {
	y, x    []float64
	shifted int
}

func (p *toyPlan) Apply() Action { return json.RawMessage(fmt.Sprintf(`{"shifted":%d}`, p.shifted)) }
func (p *toyPlan) JSON() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"y":[%g,%g],"shifted":%d}`, p.y[0], p.y[1], p.shifted))
}
func (p *toyPlan) Shift() (Plan, bool) {
	if p.shifted >= 3 {
		return nil, false
	}
	return &toyPlan{y: p.y, x: p.x, shifted: p.shifted + 1}, true
}
func (p *toyPlan) Start() (y, x []float64) { return p.y, p.x }

// recorder keeps the first iterate of every solve.
type recorder struct{ first [][]float64 }

func (r *recorder) RecordMaster(_ *gbd.MasterView, it *gbd.Iteration) {
	if it.K == 0 {
		r.first = append(r.first, append([]float64(nil), it.Y...))
	}
}

func far() time.Time { return time.Now().Add(time.Minute) }

func TestStepSolvesAndFallsBack(t *testing.T) {
	fn := &fault.NLP{Err: errors.New("injected NLP failure")}
	ctrl, err := NewController(newToy(t), Options{NLP: fn, SafeAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(toyMeas(4), far())
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != StatusOptimal || !slices.Equal(d.Y, []float64{1, 0}) || d.Fallbacks != 0 || d.Result == nil {
		t.Fatalf("first step: %+v", d)
	}
	if want := 1.0; math.Abs(d.Objective-want) > 1e-6 { // x = 4, cost y1 = 1
		t.Errorf("objective %v, want %v", d.Objective, want)
	}

	fn.Arm(true)
	wantApply := []string{`{"shifted":1}`, `{"shifted":2}`, `"safe"`, `"safe"`}
	for i, want := range wantApply {
		d, err = ctrl.Step(toyMeas(4), far())
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != StatusFallback || d.Reason == "" || string(d.Apply) != want || d.Fallbacks != i+1 {
			t.Errorf("fallback %d: status %s apply %s fallbacks %d reason %q, want apply %s",
				i+1, d.Status, d.Apply, d.Fallbacks, d.Reason, want)
		}
		if safe := want == `"safe"`; d.Safe != safe || (d.Plan == nil) != safe {
			t.Errorf("fallback %d: safe=%v plan=%s", i+1, d.Safe, d.Plan)
		}
	}
	if ctrl.Plan() != nil {
		t.Error("plan kept after the safe action")
	}

	fn.Arm(false)
	d, _ = ctrl.Step(toyMeas(4), far())
	if d.Status != StatusOptimal || d.Fallbacks != 0 {
		t.Errorf("recovery: %s after %d fallbacks", d.Status, d.Fallbacks)
	}
}

func TestNoPlanFallsBackToSafe(t *testing.T) {
	ctrl, err := NewController(newToy(t), Options{NLP: armed(&fault.NLP{Err: errors.New("injected NLP failure")})})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ctrl.Step(toyMeas(4), far())
	if d.Status != StatusFallback || !d.Safe || string(d.Apply) != `"safe"` {
		t.Errorf("got %+v, want the safe action", d)
	}
}

func TestDeadlinePassedFallsBack(t *testing.T) {
	ctrl, err := NewController(newToy(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ctrl.Step(toyMeas(4), time.Now().Add(-time.Second))
	if d.Status != StatusFallback || d.Result == nil || d.Result.Status != gbd.StatusNoSolution {
		t.Errorf("got %s (%v), want a fallback after no_solution", d.Status, d.Result)
	}
}

// TestWarmStartFromShiftedPlan: the second solve starts from the first solve's binaries.
func TestWarmStartFromShiftedPlan(t *testing.T) {
	rec := &recorder{}
	ctrl, err := NewController(newToy(t), Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Step(toyMeas(4), far()); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.Step(toyMeas(4), far()); err != nil {
		t.Fatal(err)
	}
	if len(rec.first) != 2 {
		t.Fatalf("recorded %d first iterates", len(rec.first))
	}
	if !slices.Equal(rec.first[0], []float64{0, 0}) || !slices.Equal(rec.first[1], []float64{1, 0}) {
		t.Errorf("first iterates %v, want the default then the previous plan's [1 0]", rec.first)
	}
}

type countingPolicy struct{ calls int }

func (p *countingPolicy) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	p.calls++
	return gbd.Proposal{Logits: make([]float64, v.Ypb.Count())}, nil
}

func TestSetPolicyTakesEffectNextStep(t *testing.T) {
	ctrl, err := NewController(newToy(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := ctrl.Step(toyMeas(0.5), far())
	if d.Agent.Proposed != 0 {
		t.Fatalf("classical GBD made %d proposals", d.Agent.Proposed)
	}
	pol := &countingPolicy{}
	ctrl.SetPolicy(pol)
	d, _ = ctrl.Step(toyMeas(4), far())
	if d.Status == StatusFallback {
		t.Fatalf("fallback: %s", d.Reason)
	}
	if pol.calls == 0 || d.Agent.Proposed != pol.calls {
		t.Errorf("policy called %d times, agent stats %+v", pol.calls, d.Agent)
	}
}

func TestNewControllerChecks(t *testing.T) {
	if _, err := NewController(nil, Options{}); err == nil {
		t.Error("nil family accepted")
	}
	if _, err := NewController(newToy(t), Options{SafeAfter: -1}); err == nil {
		t.Error("negative SafeAfter accepted")
	}
	if _, err := NewController(newToy(t), Options{NewMaster: func() gbd.Master { return nil }}); err == nil {
		t.Error("nil master accepted")
	}
	ctrl, _ := NewController(newToy(t), Options{})
	if _, err := ctrl.Step(nil, far()); err == nil {
		t.Error("nil measurement accepted")
	}
}

// TestCarryPoolFollowsTheMaster: the enum master carries gbd.EnumPoolSize cuts by default, the
// others gbd.DefaultPoolSize, and a pool given is kept whatever the master.
func TestCarryPoolFollowsTheMaster(t *testing.T) {
	for _, c := range []struct {
		master func() gbd.Master
		pool   int
		want   int
	}{
		{func() gbd.Master { return &enum.Master{} }, 0, gbd.EnumPoolSize},
		{func() gbd.Master { return &staged.Master{} }, 0, gbd.DefaultPoolSize},
		{func() gbd.Master { return &enum.Master{} }, 40, 40},
	} {
		ctrl, err := NewController(newToy(t), Options{NewMaster: c.master, CarryPool: c.pool})
		if err != nil {
			t.Fatal(err)
		}
		if got := ctrl.pools[0].Max(); got != c.want {
			t.Errorf("%s master, CarryPool %d: pool of %d, want %d", c.master().Name(), c.pool, got, c.want)
		}
	}
}

func TestMasterByName(t *testing.T) {
	toy := newToy(t)
	for _, name := range append([]string{""}, backend.MasterNames...) {
		f, got, err := backend.MasterFor(name, toy.Admissible())
		if err != nil || f() == nil {
			t.Errorf("%q: %v", name, err)
		}
		if (name == "" || name == backend.AutoMasterName) && got != "enum" {
			t.Errorf("%q on an enumerated Y_pb resolved to %q, want enum", name, got)
		}
	}
	if _, err := backend.MasterByName("highs"); err == nil {
		t.Error("unknown back-end accepted")
	}
	if _, err := backend.MasterByName(backend.AutoMasterName); err == nil {
		t.Error("auto resolved without a Y_pb")
	}
	// Every back-end drives the controller to the same answer.
	var objs []float64
	for _, name := range backend.MasterNames {
		f, _, _ := backend.MasterFor(name, toy.Admissible())
		ctrl, err := NewController(toy, Options{NewMaster: f})
		if err != nil {
			t.Fatal(err)
		}
		d, _ := ctrl.Step(toyMeas(4), far())
		if d.Status != StatusOptimal {
			t.Fatalf("%s: %s (%s)", name, d.Status, d.Reason)
		}
		objs = append(objs, d.Objective)
	}
	for i := range objs {
		if math.Abs(objs[i]-objs[0]) > 1e-6 {
			t.Errorf("objectives differ: %v", objs)
		}
	}
}

type panicPolicy struct{}

func (panicPolicy) Propose(*gbd.MasterView) (gbd.Proposal, error) { panic("policy bug") }

// TestPanicBecomesFallback: a panicking policy costs one period, not the controller.
func TestPanicBecomesFallback(t *testing.T) {
	ctrl, err := NewController(newToy(t), Options{Policy: panicPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ctrl.Step(toyMeas(4), far())
	if err != nil || d.Status != StatusFallback || !strings.Contains(d.Reason, "policy bug") {
		t.Errorf("got %s %q %v, want a fallback naming the panic", d.Status, d.Reason, err)
	}
}

// TestAdoptContinuesAnotherControllersPlan: a controller that adopts a plan (as a standby taking
// over does) falls back on it shifted, and the adopted fallback count keeps the SafeAfter
// allowance from being granted twice.
func TestAdoptContinuesAnotherControllersPlan(t *testing.T) {
	fn := armed(&fault.NLP{Err: errors.New("injected NLP failure")})
	ctrl, err := NewController(newToy(t), Options{NLP: fn, SafeAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctrl.Adopt(&toyPlan{y: []float64{1, 0}, x: []float64{4}}, 0)
	d, _ := ctrl.Step(toyMeas(4), far())
	if d.Status != StatusFallback || d.Safe || string(d.Apply) != `{"shifted":1}` || d.Fallbacks != 1 {
		t.Fatalf("first step after adopting: status %s safe %v apply %s fallbacks %d", d.Status, d.Safe, d.Apply, d.Fallbacks)
	}

	other, _ := NewController(newToy(t), Options{NLP: fn, SafeAfter: 2})
	other.Adopt(&toyPlan{y: []float64{1, 0}, x: []float64{4}, shifted: 2}, 2) // two fallbacks already
	d, _ = other.Step(toyMeas(4), far())
	if !d.Safe || d.Fallbacks != 3 {
		t.Errorf("adopted after 2 fallbacks: safe %v fallbacks %d, want the safe action as the 3rd", d.Safe, d.Fallbacks)
	}

	fn.Arm(false)
	rec := &recorder{}
	ok, _ := NewController(newToy(t), Options{NLP: fn, Recorder: rec})
	ok.Adopt(&toyPlan{y: []float64{0, 1}, x: []float64{4}}, 0)
	if d, _ = ok.Step(toyMeas(4), far()); d.Status != StatusOptimal {
		t.Fatalf("solve after adopting: %s", d.Status)
	}
	if len(rec.first) != 1 || !slices.Equal(rec.first[0], []float64{0, 1}) {
		t.Errorf("first iterate %v, want the adopted plan's binaries [0 1]", rec.first)
	}
}

// armed is f with its fault on.
func armed(f *fault.NLP) *fault.NLP { f.Arm(true); return f }

// A policy slower than the whole budget overruns the step it is first asked in (a proposal cannot
// be stopped), but the controller hands its time to the next solves, which do not ask it and end
// in time; a new policy (SetPolicy) is asked again.
func TestSlowPolicyIsNotAskedAgain(t *testing.T) {
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	pol := &fault.Policy{Clock: clock, Cost: 150 * time.Millisecond}
	ctrl, err := NewController(newToy(t), Options{Clock: clock, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	var late, asked, benched []int // steps that ended after their deadline; asked the policy; benched it
	step := func(k int) {
		deadline := clock.Now().Add(100 * time.Millisecond)
		calls := pol.Calls
		d, err := ctrl.Step(toyMeas([]float64{0.5, 4, 9}[k%3]), deadline)
		if err != nil {
			t.Fatal(err)
		}
		if clock.Now().After(deadline) {
			late = append(late, k)
		}
		if pol.Calls > calls {
			asked = append(asked, k)
		}
		if d.Agent.Benched > 0 {
			benched = append(benched, k)
		}
	}
	for k := range 40 {
		step(k)
	}
	if !slices.Equal(asked, []int{0}) || !slices.Equal(late, []int{0}) || len(benched) == 0 {
		t.Errorf("asked at steps %v, late at %v, benched at %v: want asked and late at 0 only, benched after", asked, late, benched)
	}
	pol.Cost = time.Millisecond
	ctrl.SetPolicy(pol) // a new policy: its time is not known
	step(40)
	if asked[len(asked)-1] != 40 {
		t.Errorf("the replaced policy was not asked: asked at %v", asked)
	}
}
