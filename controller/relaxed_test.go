package controller

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/telemetry"
	"gbdmpc/wire"
)

// recordSink keeps every decision-log record a daemon writes.
type recordSink struct {
	mu   sync.Mutex
	recs []*telemetry.Record
}

func (s *recordSink) Write(r *telemetry.Record) bool {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
	return true
}

func (s *recordSink) step(seq uint64) []*telemetry.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*telemetry.Record
	for _, r := range s.recs {
		if r.Step == seq {
			out = append(out, r)
		}
	}
	return out
}

// TestRelaxedActionOverMQTT runs the real controller behind the daemon on the capacity
// shortfall (level 3 m, 300 m³/h where the pumps give 240): the action is the soft optimum marked
// "relaxed", the retained status turns degraded with an alarm naming the shortfall, the relaxed-steps
// counter counts it and the decision log tags the soft solve. The next measurement's forecast is
// servable: an unmarked action, and the status is back online without the alarm.
func TestRelaxedActionOverMQTT(t *testing.T) {
	testsupport.NoLeaks(t)
	relaxedOverMQTT(t, testsupport.EmbeddedConfig(relaxedPlant))
}

// relaxedPlant has a generous deadline: the tests are about what is published, not how fast it is
// solved.
var relaxedPlant = configs.Plant{ID: "p1", Family: "pumpstation", Period: 20 * time.Second, Deadline: 10 * time.Second,
	MaxAge: 30 * time.Second}

func relaxedOverMQTT(t *testing.T, cfg *configs.Config) {
	sink := &recordSink{}
	d := startDaemon(t, cfg, Deps{Decisions: sink})
	d.expectStatus("p1", wire.StateOnline)

	short := map[string]any{"level_m": 3.0, "pumps_on": []int{0, 0, 0}, "demand_m3h": repeat(300, 16)}
	d.publish("p1", pumpMeasurement(1, time.Now(), short))
	var raw map[string]json.RawMessage
	m := d.expect(d.topic("p1", "action"), 20*time.Second, nil)
	if err := json.Unmarshal(m.payload, &raw); err != nil {
		t.Fatal(err)
	}
	var a wire.Action
	if err := json.Unmarshal(m.payload, &a); err != nil {
		t.Fatal(err)
	}
	if a.MeasurementSeq != 1 || a.Status != "optimal" || a.Relaxed == nil {
		t.Fatalf("action for the shortfall: %s", m.payload)
	}
	var rel map[string]any
	if err := json.Unmarshal(raw["relaxed"], &rel); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"limit", "bound", "unit", "max_violation", "first_step", "worst_step", "unserved", "unserved_unit", "proof", "shortfall"} {
		if _, ok := rel[k]; !ok {
			t.Errorf("relaxed object lacks %q: %s", k, raw["relaxed"])
		}
	}
	x := a.Relaxed
	if x.Limit != "level_min_m" || x.Bound != 1 || math.Abs(x.MaxViolation-1) > 1e-5 || x.FirstStep != 6 || x.Proof != "precheck" {
		t.Errorf("relaxed %+v", x)
	}
	if string(a.Apply) != `{"pumps_on":[0,1,1],"flow_m3h":[0,90,150]}` {
		t.Errorf("apply %s, want both large pumps at full flow", a.Apply)
	}
	// The plan stays inside the tank and shows the demand left unserved.
	var plan struct {
		Steps []struct {
			Level    float64 `json:"level_m"`
			Unserved float64 `json:"unserved_m3h"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(a.Plan, &plan); err != nil || len(plan.Steps) != 16 {
		t.Fatalf("plan %s: %v", a.Plan, err)
	}
	for i, s := range plan.Steps {
		if s.Level < 0 || s.Level > 6 {
			t.Errorf("plan step %d: level %v outside the tank", i, s.Level)
		}
		if want := map[bool]float64{true: 60, false: 0}[i >= 10]; math.Abs(s.Unserved-want) > 1e-3 {
			t.Errorf("plan step %d: %v m³/h unserved, want %v", i, s.Unserved, want)
		}
	}
	s := d.expectStatus("p1", wire.StateDegraded)
	if !strings.Contains(s.Alarm, "hard limits cannot be held") || !strings.Contains(s.Alarm, "below 1 m") || !strings.Contains(s.Alarm, "unserved") {
		t.Errorf("degraded status alarm %q", s.Alarm)
	}
	if !d.counterReaches(1, "gbdmpc_controller_relaxed_steps_total", "plant", "p1") || !d.counterReaches(1, "gbdmpc_controller_alarm", "plant", "p1") {
		t.Errorf("relaxed_steps_total = %v, alarm = %v", d.counter("gbdmpc_controller_relaxed_steps_total", "plant", "p1"), d.counter("gbdmpc_controller_alarm", "plant", "p1"))
	}

	d.publish("p1", pumpMeasurement(2, time.Now(), map[string]any{"level_m": 2.5, "pumps_on": []int{0, 1, 1}, "demand_m3h": repeat(120, 16)}))
	m = d.expect(d.topic("p1", "action"), 20*time.Second, nil)
	var a2 wire.Action
	if err := json.Unmarshal(m.payload, &a2); err != nil || a2.MeasurementSeq != 2 || a2.Relaxed != nil || strings.Contains(string(m.payload), `"relaxed"`) {
		t.Fatalf("action for the servable forecast: %s (%v)", m.payload, err)
	}
	s = d.expectStatus("p1", wire.StateOnline)
	if s.Alarm != "" {
		t.Errorf("status back online still has the alarm %q", s.Alarm)
	}
	if !d.counterReaches(0, "gbdmpc_controller_alarm", "plant", "p1") || d.counter("gbdmpc_controller_relaxed_steps_total", "plant", "p1") != 1 {
		t.Errorf("after the servable step: alarm %v, relaxed_steps_total %v", d.counter("gbdmpc_controller_alarm", "plant", "p1"),
			d.counter("gbdmpc_controller_relaxed_steps_total", "plant", "p1"))
	}
	d.stop()

	// The decision log: the relaxed step's masters and solve are tagged soft under their own solve
	// id, with the relaxation on the solve record; the servable step's are not tagged.
	softMasters, softSolve := 0, 0
	for _, r := range sink.step(1) {
		if r.Problem != telemetry.ProblemSoft || !strings.HasSuffix(r.SolveID, "-soft") {
			t.Errorf("relaxed step: untagged %s record %s", r.Type, r.SolveID)
		}
		switch r.Type {
		case telemetry.TypeMaster:
			softMasters++
		case telemetry.TypeSolve:
			softSolve++
			if r.Solve.Relaxed == nil || r.Solve.Relaxed.Limit != "level_min_m" || r.Solve.Status != "optimal" {
				t.Errorf("soft solve record %+v", r.Solve)
			}
		}
		if err := r.Validate(); err != nil {
			t.Error(err)
		}
	}
	if softMasters == 0 || softSolve != 1 {
		t.Errorf("relaxed step: %d soft masters, %d soft solve records", softMasters, softSolve)
	}
	for _, r := range sink.step(2) {
		if r.Problem != "" || r.Type == telemetry.TypeSolve && r.Solve.Relaxed != nil {
			t.Errorf("servable step: %s record tagged %q", r.Type, r.Problem)
		}
	}
}
