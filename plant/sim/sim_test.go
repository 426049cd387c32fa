package sim

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipm"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
)

// TestVolumeConservation drives the plant with a fixed pump schedule and checks that, with no
// clamping, pumped volume minus drawn volume equals A·Δh.
// hysteresis steps s under a fixed rule on the level: pump 2 always, pump 3 as well while the tank
// refills from below 2.5 m to above 3.5 m.
func hysteresis(t *testing.T, s *Simulator) func() Transition {
	big := false
	return func() Transition {
		switch {
		case s.Level() < 2.5:
			big = true
		case s.Level() > 3.5:
			big = false
		}
		on, flow := []int{0, 1, 0}, []float64{0, 40, 0}
		if big {
			on[2], flow[2] = 1, 120
		}
		tr, err := s.Step(on, flow)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

func TestVolumeConservation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Seed = 42
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h0 := s.Level()
	step := hysteresis(t, s)
	for range 96 {
		tr := step()
		if tr.Clamped {
			t.Fatalf("step %d clamped at %v m: pick another schedule for this test", tr.Step, tr.LevelEnd)
		}
	}
	got := s.Inflow - s.Drawn
	want := cfg.Plant.Area * (s.Level() - h0)
	if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
		t.Errorf("Σ inflow − Σ demand = %v m³, A·Δh = %v m³", got, want)
	}
}

// TestClampAndViolation: a pump running flat out into a full tank overflows at the physical top and
// records the excess and the violation.
func TestClampAndViolation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Level0 = 5.9
	cfg.NoiseSigma = 0
	cfg.Mismatch = []float64{0, 0, 0}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.Step([]int{0, 1, 1}, []float64{0, 90, 150})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Clamped || !tr.Violation || tr.LevelEnd != cfg.Plant.PhysMax {
		t.Fatalf("got %+v, want clamped at %v with a violation", tr, cfg.Plant.PhysMax)
	}
	if got, want := s.Inflow-s.Drawn-s.Overflow, cfg.Plant.Area*(s.Level()-cfg.Level0); math.Abs(got-want) > 1e-9 {
		t.Errorf("volume balance with overflow: %v vs %v", got, want)
	}
}

// TestDeterministic: the same seed gives the same plant.
func TestDeterministic(t *testing.T) {
	run := func() []float64 {
		s, err := New(DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for range 20 {
			tr, _ := s.Step([]int{0, 1, 0}, []float64{0, 70, 0})
			out = append(out, tr.LevelEnd, tr.DemandActual)
		}
		return append(out, s.Mismatch()...)
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ at %d: %v vs %v", i, a[i], b[i])
		}
	}
	for _, d := range a[len(a)-3:] {
		if math.Abs(d) > 0.03 {
			t.Errorf("mismatch %v outside ±3 %%", d)
		}
	}
}

// TestMeasurementDecodes: the simulator's measurement passes the family's validation, carries seq
// and ts_ms, and its seq increases.
func TestMeasurementDecodes(t *testing.T) {
	s, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	m1, m2 := string(s.Measurement()), string(s.Measurement())
	for _, m := range []string{m1, m2} {
		for _, f := range []string{`"v":1`, `"seq":`, `"ts_ms":`, `"level_m":`, `"pumps_on":`, `"demand_m3h":`, `"price_eur_kwh":`} {
			if !strings.Contains(m, f) {
				t.Errorf("measurement %s lacks %s", m, f)
			}
		}
	}
	if !strings.Contains(m1, `"seq":1`) || !strings.Contains(m2, `"seq":2`) {
		t.Errorf("seq does not increase: %s / %s", m1, m2)
	}
}

func closedLoop(t *testing.T, steps int, out string) *Run {
	t.Helper()
	cfg := DefaultConfig()
	// A generous budget keeps the outcome independent of machine load: the test is about control,
	// not speed.
	run, err := RunClosedLoop(context.Background(), LoopOptions{Sim: cfg, Steps: steps, OutDir: out, MPC: mpc.Options{}, StepBudget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := run.Summary
	t.Logf("%d steps: cost %.2f €, level [%.2f, %.2f], solve p50 %.3f s p95 %.3f s max %.3f s, iterations mean %.1f, fallbacks %d",
		s.Steps, s.CostEUR, s.MinLevel, s.MaxLevel, s.SolveP50, s.SolveP95, s.SolveMax, s.IterMean, s.Fallbacks)
	if s.Violations != 0 {
		t.Errorf("%d level violations", s.Violations)
	}
	if s.Steps != steps || len(run.Steps) != steps {
		t.Errorf("ran %d steps, want %d", s.Steps, steps)
	}
	return run
}

// TestClosedLoopShort is the always-on closed loop: three hours from midnight, with the outputs.
func TestClosedLoopShort(t *testing.T) {
	dir := t.TempDir()
	run := closedLoop(t, 12, dir)
	if run.Summary.Fallbacks != 0 {
		t.Errorf("%d fallbacks in an unhurried run", run.Summary.Fallbacks)
	}
	for _, f := range []string{"steps.csv", "summary.json", "summary.txt", "figure.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if n := strings.Count(string(csv), "\n"); n != 13 {
		t.Errorf("steps.csv has %d lines, want header + 12", n)
	}
}

// TestClosedLoopDay is the acceptance run: one day (96 steps) on the default scenario with
// no level violation.
func TestClosedLoopDay(t *testing.T) {
	if testing.Short() {
		t.Skip("96 GBD solves")
	}
	out := os.Getenv("GBDMPC_SIM_OUT") // set to keep the figure for inspection
	if out == "" {
		out = t.TempDir()
	}
	closedLoop(t, 96, out)
}

// TestFigureRenders draws a run made by a hysteresis rule (no solver), with a few fallback steps,
// and checks that a PNG comes out.
func TestFigureRenders(t *testing.T) {
	cfg := DefaultConfig()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var recs []StepRecord
	step := hysteresis(t, s)
	for k := range 96 {
		tr := step()
		r := StepRecord{Transition: tr, Status: mpc.StatusOptimal, Objective: 10, LBD: 10, UBD: 10 + 0.01*float64(k%5),
			Iterations: 20 + k%7, SolveSeconds: 0.2 + 0.01*float64(k%9)}
		if k%30 == 29 {
			r.Status, r.LBD, r.UBD = mpc.StatusFallback, math.Inf(-1), math.Inf(1)
		}
		recs = append(recs, r)
	}
	dir := os.Getenv("GBDMPC_FIG_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	run := &Run{Steps: recs, Summary: Summarize(recs, s, &cfg.Plant)}
	if err := run.Write(dir, &cfg.Plant); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "figure.png"))
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("figure.png is not a PNG (%d bytes, %v)", len(b), err)
	}
}

// downNLP is a solver that is down: every NLP fails.
type downNLP struct{}

func (downNLP) Solve(*nlp.Problem, []float64, nlp.Options) (nlp.Result, error) {
	return nlp.Result{}, errors.New("injected: solver down")
}

// TestSolverDownAllDay: with the NLP solver down for a whole simulated day, every step falls back
// and, the first plan never made, applies the safe action. The default level-holding safe action
// keeps the tank within its limits; the fixed "all pumps off" empties it (which is why it is not
// the default any more).
func TestSolverDownAllDay(t *testing.T) {
	run := func(hold bool) Summary {
		cfg := DefaultConfig()
		cfg.Plant.SafeHold = hold
		r, err := RunClosedLoop(context.Background(), LoopOptions{Sim: cfg, Steps: 96, MPC: mpc.Options{NLP: downNLP{}}, StepBudget: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return r.Summary
	}
	hold, off := run(true), run(false)
	t.Logf("level-holding safe action: level [%.2f, %.2f] m, %d violations, %.1f m³ unserved, cost %.2f €",
		hold.MinLevel, hold.MaxLevel, hold.Violations, hold.UnservedM3, hold.CostEUR)
	t.Logf("all pumps off:             level [%.2f, %.2f] m, %d violations, %.1f m³ unserved",
		off.MinLevel, off.MaxLevel, off.Violations, off.UnservedM3)
	if hold.Fallbacks != 96 || off.Fallbacks != 96 {
		t.Fatalf("fallbacks %d and %d, want every step", hold.Fallbacks, off.Fallbacks)
	}
	if hold.Violations != 0 || hold.UnservedM3 > 0 {
		t.Errorf("the level-holding safe action let the level leave its limits (%d violations, %.1f m³ unserved)", hold.Violations, hold.UnservedM3)
	}
	if off.Violations == 0 {
		t.Errorf("all pumps off for a day kept the level within limits: the comparison shows nothing")
	}
}

// TestClosedLoopThroughAShortfall: a day whose demand exceeds what the pumps can deliver (a flat
// 300 m³/h against 240) makes the controller publish relaxed actions, which the simulated plant
// applies like any other: the tank drains to its floor, the steps are counted as relaxed in the
// summary and in steps.csv, and the loop never falls back.
func TestClosedLoopThroughAShortfall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Profile = pumpstation.Profile{DemandBase: 300, PriceOff: 0.2, PricePeak: 0.2}
	cfg.NoiseSigma = 0
	dir := t.TempDir()
	run, err := RunClosedLoop(context.Background(), LoopOptions{Sim: cfg, Steps: 6, StepBudget: time.Minute, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Steps {
		if r.Relaxed == nil || r.Status == mpc.StatusFallback || r.Relaxed.Limit != "level_min_m" {
			t.Errorf("step %d: status %s, relaxed %+v (%s)", r.Step, r.Status, r.Relaxed, r.Reason)
		}
		if !reflect.DeepEqual(r.On, []int{0, 1, 1}) {
			t.Errorf("step %d: pumps %v, want both large ones", r.Step, r.On)
		}
	}
	if run.Summary.Relaxed != len(run.Steps) || run.Summary.Fallbacks != 0 {
		t.Errorf("summary: %d relaxed, %d fallbacks of %d steps", run.Summary.Relaxed, run.Summary.Fallbacks, len(run.Steps))
	}
	csv, err := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if !strings.Contains(lines[0], ",relaxed,relaxed_max_violation_m,relaxed_unserved_m3") || len(lines) != 7 {
		t.Fatalf("steps.csv header %q, %d lines", lines[0], len(lines))
	}
	for _, l := range lines[1:] {
		if cells := strings.Split(l, ","); cells[len(cells)-3] != "1" {
			t.Errorf("steps.csv row not marked relaxed: %s", l)
		}
	}
}

// TestClosedLoopStopsWithItsContext: a loop whose context ends (a signal, in the commands) stops
// before its next step and returns the steps it ran with the context's error, writing no outputs.
func TestClosedLoopStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	run, err := RunClosedLoop(ctx, LoopOptions{Sim: DefaultConfig(), Steps: 96, StepBudget: time.Minute, OutDir: dir,
		MPC: mpc.Options{NLP: downNLP{}}, // fast steps: the loop itself is under test
		OnStep: func(r StepRecord) {
			if r.Step == 2 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) || run == nil || len(run.Steps) != 3 {
		n := -1
		if run != nil {
			n = len(run.Steps)
		}
		t.Fatalf("got %d steps, %v; want 3 steps and context.Canceled", n, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an interrupted loop wrote %d outputs", len(entries))
	}
}

// cancellingNLP solves with the native solver and ends the run's context on its call-th NLP,
// counting the NLPs solved after that.
type cancellingNLP struct {
	inner        nlp.Solver
	call, calls  int
	after        int
	cancel       context.CancelFunc
	cancelledNow bool
}

func (c *cancellingNLP) Solve(p *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	c.calls++
	if c.cancelledNow {
		c.after++
	}
	if c.calls == c.call {
		c.cancel()
		c.cancelledNow = true
	}
	return c.inner.Solve(p, x0, opt)
}

// TestClosedLoopSignalEndsTheStepInProgress: a context that ends inside a step's solve ends that
// solve at its next look at the time, not at the step's deadline (a minute away here), and the
// loop returns with the step it was in.
func TestClosedLoopSignalEndsTheStepInProgress(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &cancellingNLP{inner: ipm.New(), call: 3, cancel: cancel}
	run, err := RunClosedLoop(ctx, LoopOptions{Sim: DefaultConfig(), Steps: 96, StepBudget: time.Minute, MPC: mpc.Options{NLP: c}})
	if !errors.Is(err, context.Canceled) || run == nil || len(run.Steps) != 1 {
		t.Fatalf("got %v; want the first step only and context.Canceled", err)
	}
	if c.after > 2 {
		t.Errorf("%d NLPs solved after the context ended, want the solve to stop at once", c.after)
	}
}
