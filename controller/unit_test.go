package controller

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/plant/synthesis"
	"gbdmpc/telemetry"
	"gbdmpc/wire"
)

func TestActionEncodesNonFiniteAsNull(t *testing.T) {
	d := mpc.Decision{Status: mpc.StatusFallback, Objective: math.Inf(1), LBD: math.Inf(-1), UBD: math.NaN(),
		Y: []float64{1, math.Inf(1)}}
	now := time.UnixMilli(1_700_000_000_000)
	b, err := json.Marshal(newAction("p", 7, 9, now, now.Add(-20*time.Second).UnixMilli(), time.Minute, 30*time.Second, &d, "", false))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"objective":null`, `"lbd":null`, `"ubd":null`, `"y":[1,null]`, `"apply":null`,
		`"plan":null`, `"seq":7`, `"measurement_seq":9`, `"expires_ms":1700000040000`, `"deadline_seconds":30`} {
		if !strings.Contains(s, want) {
			t.Errorf("action %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, `"agent"`) {
		t.Error("classical GBD action carries agent stats")
	}
}

func TestRunActorsStopTogether(t *testing.T) {
	boom := errors.New("boom")
	wait := func(ctx context.Context) error { <-ctx.Done(); return nil }
	err := runActors(context.Background(), []actor{{"a", wait}, {"b", func(context.Context) error { return boom }}, {"c", wait}})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "b: boom") {
		t.Errorf("err = %v", err)
	}
	err = runActors(context.Background(), []actor{{"a", wait}, {"quitter", func(context.Context) error { return nil }}})
	if err == nil || !strings.Contains(err.Error(), "quitter stopped unexpectedly") {
		t.Errorf("an actor returning nil on its own must stop the group with an error, got %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := runActors(ctx, []actor{{"a", wait}, {"b", wait}}); err != nil {
		t.Errorf("clean shutdown returned %v", err)
	}
}

// memorySink keeps decision-log records for inspection.
type memorySink struct{ recs []*telemetry.Record }

func (m *memorySink) Write(r *telemetry.Record) bool { m.recs = append(m.recs, r); return true }

// A real solve (Ipopt, the synthesis family) through mpc.Controller with the recorder attached gives
// one valid master record per master problem and one solve record, with everything replay needs.
func TestDecisionRecorderOnARealSolve(t *testing.T) {
	fam, err := registry.Default("synthesis")
	if err != nil {
		t.Fatal(err)
	}
	sink := &memorySink{}
	clock := newFakeClock()
	rec := &decisionRecorder{sink: sink, clock: clock, plant: "s1", family: fam.Name(), run: "r"}
	ctl, err := mpc.NewController(fam, mpc.Options{Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	in := synthesis.Instance{V: 1, Gamma: []float64{10, 20, 30, 5, 3}, U: 10, Rho: []float64{0.5, 1.5}}
	m, err := fam.DecodeMeasurement(synthesis.MarshalInstance(in))
	if err != nil {
		t.Fatal(err)
	}
	rec.begin(1, 42, "builtin:oracle", m.Instance())
	d, err := ctl.Step(m, time.Now().Add(30*time.Second))
	if err != nil || d.Status != mpc.StatusOptimal {
		t.Fatalf("step: %v %+v", err, d)
	}
	rec.finish(&d)
	if len(sink.recs) < 2 {
		t.Fatalf("%d records", len(sink.recs))
	}
	feasCuts := 0
	for i, r := range sink.recs {
		if err := r.Validate(); err != nil {
			t.Errorf("record %d invalid: %v", i, err)
		}
		if r.Plant != "s1" || r.Family != "synthesis" || r.SolveID != "r-s1-1" || r.Step != 42 || r.PolicyVersion != "builtin:oracle" {
			t.Errorf("record %d header %+v", i, r)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("record %d does not encode: %v", i, err)
		}
		if i == len(sink.recs)-1 {
			if r.Type != telemetry.TypeSolve || r.Solve.Status != "optimal" || r.Solve.Agent == nil || len(r.Solve.Instance) == 0 {
				t.Errorf("last record %+v", r.Solve)
			}
			continue
		}
		mr := r.Master
		if r.Type != telemetry.TypeMaster || mr.NY != 5 || mr.YpbCount != 12 || mr.YpbSignature == "" ||
			len(mr.Cuts) != mr.Iter+1 || len(mr.Prev) != 5 || len(mr.Instance) == 0 || mr.MasterStatus == "" {
			t.Errorf("master record %d: %+v", i, mr)
		}
		for _, c := range mr.Cuts {
			if c.Kind == telemetry.CutFeasibility {
				feasCuts++
			}
		}
	}
	if feasCuts == 0 {
		t.Error("rho1 < 1 makes y1 = 0 infeasible, yet no feasibility cut was recorded")
	}
}

type fakeHealth struct {
	healthy bool
	err     error
	dropped uint64
	errors  uint64
}

func (f *fakeHealth) Healthy() bool       { return f.healthy }
func (f *fakeHealth) LastError() error    { return f.err }
func (f *fakeHealth) Dropped() uint64     { return f.dropped }
func (f *fakeHealth) WriteErrors() uint64 { return f.errors }

// TestDecisionAlarm: an I/O failure raises the alarm while it lasts, and at least at one check;
// dropped records raise it for dropAlarmFor after the last drop.
func TestDecisionAlarm(t *testing.T) {
	h := &fakeHealth{healthy: true, dropped: 7}
	a := &decisionAlarm{health: h, seen: h.Dropped()}
	now := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	if got := a.check(now); got != "" {
		t.Fatalf("alarm %q on a healthy log with old drops", got)
	}
	h.healthy, h.err = false, errors.New("no space left on device")
	if got := a.check(now); !strings.Contains(got, "cannot write") || !strings.Contains(got, "no space left") {
		t.Errorf("alarm %q while unhealthy", got)
	}
	h.healthy, h.dropped = true, 9
	if got := a.check(now); !strings.Contains(got, "dropped records") || strings.Contains(got, "cannot write") {
		t.Errorf("alarm %q after drops", got)
	}
	if got := a.check(now.Add(dropAlarmFor - time.Second)); got == "" {
		t.Error("drop alarm cleared too early")
	}
	if got := a.check(now.Add(dropAlarmFor)); got != "" {
		t.Errorf("drop alarm %q still raised %v after the last drop", got, dropAlarmFor)
	}
	// A write error the log recovered from before the check still raises the alarm once.
	h.errors = 1
	if got := a.check(now.Add(dropAlarmFor)); !strings.Contains(got, "write failed and recovered") {
		t.Errorf("alarm %q after a write error the log recovered from", got)
	}
	if got := a.check(now.Add(dropAlarmFor + time.Second)); got != "" {
		t.Errorf("alarm %q still raised at the check after the recovery", got)
	}
	if (*decisionAlarm)(nil).check(now) != "" {
		t.Error("no decision log, but an alarm")
	}
}

// TestGateRateLimit: the error topic gets error_burst messages at once and then error_rate per
// second; the next one sent carries how many were suppressed; a full publisher queue suppresses
// too; a standby counts its rejections and sends nothing.
func TestGateRateLimit(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, []configs.Plant{{ID: "p1"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(&configs.Plant{ID: "p1", MaxAge: time.Minute, ErrorRate: 1, ErrorBurst: 2, MaxPayloadBytes: configs.DefaultMaxPayload}, nil, m, zap.NewNop())
	var sent []wire.ErrorMessage
	full := false
	g.send = func(b []byte) bool {
		if full {
			return false
		}
		var e wire.ErrorMessage
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, e)
		return true
	}
	t0 := time.Unix(1_700_000_000, 0)
	r := wire.Reject(wire.ReasonJSON, nil, "junk")
	for range 5 {
		g.refuse(r, t0, false)
	}
	if len(sent) != 2 || sent[0].Suppressed != 0 || sent[1].Suppressed != 0 {
		t.Fatalf("burst of 5 at once: sent %+v, want 2 messages without suppressions", sent)
	}
	g.refuse(r, t0.Add(500*time.Millisecond), false) // half a token: suppressed
	g.refuse(r, t0.Add(time.Second), false)
	if len(sent) != 3 || sent[2].Suppressed != 4 {
		t.Fatalf("after a second: sent %+v, want a third carrying 4 suppressed", sent)
	}
	full = true
	g.refuse(r, t0.Add(3*time.Second), false)
	full = false
	g.refuse(r, t0.Add(5*time.Second), true) // standby: counted only
	g.refuse(r, t0.Add(5*time.Second), false)
	if len(sent) != 4 || sent[3].Suppressed != 1 {
		t.Fatalf("after a full queue and a standby rejection: sent %+v, want a fourth carrying 1", sent)
	}
	rejected := gathered(t, reg, "gbdmpc_controller_rejected_total")
	suppressed := gathered(t, reg, "gbdmpc_controller_errors_suppressed_total")
	if rejected != 10 || suppressed != 5 {
		t.Errorf("rejected %v, suppressed %v; want 10 and 5", rejected, suppressed)
	}
}

// gathered sums every series of a counter in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// TestWireRelaxedMatchesTheSolvers: the action's "relaxed" object, converted from the MPC layer's
// Relaxation at the edge, encodes exactly as the Relaxation does, every field set; and the
// "agent" object carries every count of the solver's.
func TestWireRelaxedMatchesTheSolvers(t *testing.T) {
	r := &mpc.Relaxation{Limit: "level_min_m", Bound: 0.5, Unit: "m", MaxViolation: 0.25, FirstStep: 3, WorstStep: 7,
		Unserved: 12.5, UnservedUnit: "m3", Proof: mpc.ProofGBD, ProofDetail: "infeasible", Shortfall: "level below 0.5 m from step 3"}
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(relaxedOf(r))
	if err != nil || string(got) != string(want) {
		t.Errorf("wire encodes %s (%v)\nthe solver's  %s", got, err, want)
	}
	if relaxedOf(nil) != nil {
		t.Error("no relaxation became a relaxed object")
	}
	a := agentOf(gbd.AgentStats{Proposed: 1, Feasible: 2, Accepted: 3, SolverSelected: 4, Repeated: 5, Final: 6, Benched: 7})
	if *a != (wire.Agent{Proposed: 1, Feasible: 2, Accepted: 3, SolverSelected: 4, Repeated: 5, Final: 6, Benched: 7}) {
		t.Errorf("agent %+v", *a)
	}
}
