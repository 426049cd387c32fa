package controller

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// The contract's action fields, in order.
var actionFields = []string{"v", "seq", "measurement_seq", "ts_ms", "expires_ms", "status", "apply", "plan", "y",
	"objective", "lbd", "ubd", "iterations", "solve_seconds", "deadline_seconds"}

func TestMeasurementInActionOut(t *testing.T) {
	testsupport.NoLeaks(t)
	var gotDeadline time.Time
	f := newFakeStepper(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
		gotDeadline = dl
		return optimalDecision(m, dl)
	})
	notify := &recordingNotifier{}
	deps := fakeDeps(f)
	deps.Notifier = notify
	d := startDaemon(t, testsupport.EmbeddedConfig(), deps)
	if !notify.has("READY=1") {
		t.Error("READY=1 not sent before Started")
	}

	var seq0 uint64
	for i, mseq := range []uint64{10, 11} {
		sent := time.Now()
		d.publish("p1", pumpMeasurement(mseq, sent, nil))
		var raw map[string]json.RawMessage
		m := d.expect(d.topic("p1", "action"), 10*time.Second, nil)
		if err := json.Unmarshal(m.payload, &raw); err != nil {
			t.Fatalf("action %s: %v", m.payload, err)
		}
		for _, k := range actionFields {
			if _, ok := raw[k]; !ok {
				t.Errorf("action lacks %q: %s", k, m.payload)
			}
		}
		var a wire.Action
		if err := json.Unmarshal(m.payload, &a); err != nil {
			t.Fatal(err)
		}
		if m.retained {
			t.Error("action published retained")
		}
		if i == 0 {
			seq0 = a.Seq
		}
		if a.V != 1 || a.Seq != seq0+uint64(i) || a.MeasurementSeq != mseq || a.Status != "optimal" || a.Plant != "p1" {
			t.Errorf("action %d: %+v", i, a)
		}
		// The action expires one period after the measurement was taken, not after it was published.
		if a.ExpiresMs-sent.UnixMilli() != 2000 || a.DeadlineSeconds != 1 {
			t.Errorf("expires_ms - the measurement's ts_ms = %d, deadline_seconds = %v; want 2000 and 1", a.ExpiresMs-sent.UnixMilli(), a.DeadlineSeconds)
		}
		if string(a.Apply) != `{"pumps_on":[1,0,0],"flow_m3h":[40,0,0]}` || len(a.Y) != 3 || a.Iterations != 7 {
			t.Errorf("action content %s", m.payload)
		}
		// The deadline counts from the receipt, less the reserve (default a tenth of the deadline).
		want := time.Second - 100*time.Millisecond
		if gotDeadline.Before(sent.Add(want)) || gotDeadline.After(time.Now().Add(want)) {
			t.Errorf("solve deadline %v is not receipt + 900ms (sent %v)", gotDeadline, sent)
		}
	}
	if n := d.counter("gbdmpc_controller_actions_total", "plant", "p1", "status", "optimal"); !d.counterReaches(2, "gbdmpc_controller_actions_total", "plant", "p1", "status", "optimal") {
		t.Errorf("actions_total = %v, want 2", n)
	}
	if n := d.counter("gbdmpc_controller_loop_overhead_seconds", "plant", "p1"); !d.counterReaches(2, "gbdmpc_controller_loop_overhead_seconds", "plant", "p1") {
		t.Errorf("overhead observations = %v, want 2", n)
	}
	if n := d.counter("gbdmpc_build_info"); !d.counterReaches(1, "gbdmpc_build_info") {
		t.Errorf("build_info = %v", n)
	}
	d.stop()
}

func TestFallbackDegradedThenOnline(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	d := startDaemon(t, testsupport.EmbeddedConfig(), fakeDeps(f))
	if s := d.expectStatus("p1", wire.StateOnline); s.V != 1 || s.Plant != "p1" || !slices.Equal(s.Plants, []string{"p1"}) {
		t.Errorf("status %+v", s)
	}

	f.setDecide(fallbackDecision)
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	m := d.expect(d.topic("p1", "action"), 10*time.Second, nil)
	var raw map[string]any
	if err := json.Unmarshal(m.payload, &raw); err != nil {
		t.Fatalf("fallback action is not JSON (non-finite bounds?): %s: %v", m.payload, err)
	}
	if raw["status"] != "fallback" || raw["lbd"] != nil || raw["objective"] != nil || raw["ubd"] != nil {
		t.Errorf("fallback action: %s", m.payload)
	}
	st := d.expect(d.topic("p1", "status"), 10*time.Second, nil)
	var s wire.Status
	_ = json.Unmarshal(st.payload, &s)
	if s.State != wire.StateDegraded {
		t.Errorf("status after fallback = %s", st.payload)
	}
	if n := d.counter("gbdmpc_controller_fallbacks_total", "plant", "p1", "kind", "safe"); !d.counterReaches(1, "gbdmpc_controller_fallbacks_total", "plant", "p1", "kind", "safe") {
		t.Errorf("fallbacks_total = %v", n)
	}

	f.setDecide(optimalDecision)
	d.publish("p1", pumpMeasurement(2, time.Now(), nil))
	if a := d.expectAction("p1", 2); a.Status != "optimal" {
		t.Errorf("recovery action %+v", a)
	}
	d.expectStatus("p1", wire.StateOnline)
	d.stop()
}

// A solve that runs past the deadline publishes no action (a late action must not reach the plant,
// which keeps its last valid one): the miss is counted and the plant told on the error topic. A
// measurement that waited in the mailbox past its deadline is not solved at all. The clock is
// injected, so "past" is exact.
func TestDeadlineMissWithheld(t *testing.T) {
	testsupport.NoLeaks(t)
	clock := newFakeClock()
	f := newFakeStepper(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
		clock.Advance(dl.Sub(clock.Now()) + 150*time.Millisecond) // past the reserve too
		return optimalDecision(m, dl)
	})
	deps := fakeDeps(f)
	deps.Clock = clock
	d := startDaemon(t, testsupport.EmbeddedConfig(), deps)
	d.publish("p1", pumpMeasurement(1, clock.Now(), nil))
	e := d.expectError("p1")
	if e.Reason != wire.ReasonDeadline || e.Seq == nil || *e.Seq != 1 {
		t.Errorf("error %+v, want reason %s for seq 1", e, wire.ReasonDeadline)
	}
	if !d.counterReaches(1, "gbdmpc_controller_deadline_misses_total", "plant", "p1") {
		t.Errorf("deadline misses = %v, want 1", d.counter("gbdmpc_controller_deadline_misses_total", "plant", "p1"))
	}
	f.setDecide(optimalDecision)
	d.publish("p1", pumpMeasurement(2, clock.Now(), nil))
	d.expectAction("p1", 2)
	if n := d.counter("gbdmpc_controller_actions_total", "plant", "p1", "status", "optimal"); !d.counterReaches(1, "gbdmpc_controller_actions_total", "plant", "p1", "status", "optimal") {
		t.Errorf("%v actions, want 1 (none for the late step)", n)
	}
	if n := d.counter("gbdmpc_controller_deadline_misses_total", "plant", "p1"); n != 1 {
		t.Errorf("deadline misses = %v after an in-time step, want 1", n)
	}

	// Measurement 4 arrives while 3's step runs; 3's step then overruns both deadlines.
	entered, release := make(chan struct{}, 1), make(chan struct{})
	f.setDecide(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
		entered <- struct{}{}
		<-release
		clock.Advance(3 * time.Second)
		return optimalDecision(m, dl)
	})
	d.publish("p1", pumpMeasurement(3, clock.Now(), nil))
	<-entered
	clock.Advance(10 * time.Millisecond)
	d.publish("p1", pumpMeasurement(4, clock.Now(), nil))
	if !d.counterReaches(float64(clock.Now().UnixNano())/1e9, "gbdmpc_controller_last_measurement_timestamp_seconds", "plant", "p1") {
		t.Fatal("measurement 4 was not accepted on arrival")
	}
	close(release)
	for _, want := range []uint64{3, 4} {
		if e := d.expectError("p1"); e.Reason != wire.ReasonDeadline || e.Seq == nil || *e.Seq != want {
			t.Errorf("error %+v, want reason %s for seq %d", e, wire.ReasonDeadline, want)
		}
	}
	if !d.counterReaches(3, "gbdmpc_controller_deadline_misses_total", "plant", "p1") {
		t.Errorf("deadline misses = %v, want 3", d.counter("gbdmpc_controller_deadline_misses_total", "plant", "p1"))
	}
	if f.steps != 3 {
		t.Errorf("%d steps ran, want 3 (measurement 4 is never solved)", f.steps)
	}
	d.stop()
}

// Retained status on connect, the Last Will when the daemon's connection dies, recovery by
// reconnection, and offline on a graceful stop.
func TestRetainedStatusAndLastWill(t *testing.T) {
	testsupport.NoLeaks(t)
	broker, err := StartEmbeddedBroker("127.0.0.1:0", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	proxy := newTCPProxy(t, broker.Addr())
	defer proxy.close()
	cfg := testsupport.EmbeddedConfig()
	cfg.Broker = configs.Broker{URL: "tcp://" + proxy.Addr(), ClientID: "gbdmpc-lwt", MaxReconnectInterval: 100 * time.Millisecond}
	cfg.ApplyDefaults()
	f := newFakeStepper(optimalDecision)
	d := startDaemon(t, cfg, fakeDeps(f))
	// The observer talks to the broker directly, so it stays connected through the cut.
	d.client.Disconnect(50)
	d.info.BrokerURL = broker.URL()
	d.client = d.connect("gbdmpc-observer-direct", cfg.TopicPrefix+"/#")

	m := d.expect(d.topic("p1", "status"), 10*time.Second, nil)
	if !m.retained || !strings.Contains(string(m.payload), `"state":"online"`) {
		t.Fatalf("first status %s (retained %v), want retained online", m.payload, m.retained)
	}

	proxy.cut()
	d.expectStatus("p1", wire.StateOffline) // the Last Will
	proxy.resume()
	d.expectStatus("p1", wire.StateOnline) // paho reconnects, the connect handler republishes
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	d.expectAction("p1", 1)
	if n := d.counter("gbdmpc_mqtt_reconnects_total", "plant", "p1"); !d.counterReaches(1, "gbdmpc_mqtt_reconnects_total", "plant", "p1") {
		t.Errorf("reconnects = %v, want 1", n)
	}

	d.stop()
	// A late subscriber sees the retained offline the daemon published before disconnecting. It
	// keeps its own log: the observer's queue may still hold live statuses from before the stop,
	// and the embedded broker flags live deliveries of retained publishes as retained too.
	late := newTopicLog(t, broker.URL(), cfg.Topic("p1", "status"))
	if !late.waitFor(cfg.Topic("p1", "status"), 10*time.Second, func(m [][]byte) bool { return len(m) > 0 }) {
		t.Fatal("no retained status after stop")
	}
	if s := late.get(cfg.Topic("p1", "status"))[0]; !strings.Contains(string(s), `"state":"offline"`) {
		t.Errorf("retained status after stop: %s", s)
	}
	late.c.Disconnect(50)
}

func TestBadMessagesRejected(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	cfg := testsupport.EmbeddedConfig()
	cfg.Plants[0].ErrorBurst = 100 // one error message for each case, none suppressed
	d := startDaemon(t, cfg, fakeDeps(f))
	now := time.Now
	d.publish("p1", pumpMeasurement(5, now(), nil))
	first := d.expectAction("p1", 5).Seq

	long := repeat(80, 17)
	cases := []struct {
		name, reason string
		payload      []byte
		seq          any // expected "seq" of the error (nil: null)
	}{
		{"not JSON", wire.ReasonJSON, []byte(`{"v":1,"seq":`), nil},
		{"JSON array", wire.ReasonJSON, []byte(`[1,2,3]`), nil},
		{"wrong v", wire.ReasonVersion, pumpMeasurement(6, now(), map[string]any{"v": 2}), 6.0},
		{"missing v", wire.ReasonMissing, pumpMeasurement(6, now(), map[string]any{"v": nil}), 6.0},
		{"missing seq", wire.ReasonMissing, pumpMeasurement(6, now(), map[string]any{"seq": nil}), nil},
		{"missing ts_ms", wire.ReasonMissing, pumpMeasurement(6, now(), map[string]any{"ts_ms": nil}), 6.0},
		{"missing level", wire.ReasonMissing, pumpMeasurement(6, now(), map[string]any{"level_m": nil}), 6.0},
		{"overflowing number", wire.ReasonNonFinite, []byte(strings.Replace(string(pumpMeasurement(6, now(), nil)), `"level_m":3`, `"level_m":1e999`, 1)), 6.0},
		{"NaN string", wire.ReasonNonFinite, pumpMeasurement(6, now(), map[string]any{"level_m": "NaN"}), 6.0},
		{"Infinity in a forecast", wire.ReasonNonFinite, pumpMeasurement(6, now(), map[string]any{"price_eur_kwh": append(repeat(0.2, 15), 0), "demand_m3h": []any{"Infinity"}}), 6.0},
		{"wrong array length", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"demand_m3h": long}), 6.0},
		{"out of range level", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"level_m": 9.5}), 6.0},
		{"negative demand", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"demand_m3h": append(repeat(80, 15), -1)}), 6.0},
		{"pump state 2", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"pumps_on": []int{0, 2, 0}}), 6.0},
		// A name given twice or in another case leaves the reading ambiguous (encoding/json would
		// plan from the last of them, or from "LEVEL_M"): rejected, not guessed.
		{"level given twice", wire.ReasonInvalid, []byte(strings.Replace(string(pumpMeasurement(6, now(), nil)), `"level_m":3`, `"level_m":3,"level_m":5`, 1)), 6.0},
		{"level in capitals beside it", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"LEVEL_M": 5}), 6.0},
		{"level in capitals alone", wire.ReasonInvalid, pumpMeasurement(6, now(), map[string]any{"level_m": nil, "Level_M": 5}), 6.0},
		{"old timestamp", wire.ReasonStale, pumpMeasurement(6, now().Add(-time.Minute), nil), 6.0},
		{"future timestamp", wire.ReasonFuture, pumpMeasurement(6, now().Add(time.Minute), nil), 6.0},
		{"repeated seq", wire.ReasonSeq, pumpMeasurement(5, now(), nil), 5.0},
		{"older seq", wire.ReasonSeq, pumpMeasurement(3, now(), nil), 3.0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := d.counter("gbdmpc_controller_rejected_total", "plant", "p1", "reason", c.reason)
			d.publish("p1", c.payload)
			m := d.expect(d.topic("p1", "error"), 10*time.Second, nil)
			var e map[string]any
			if err := json.Unmarshal(m.payload, &e); err != nil {
				t.Fatalf("error payload %s", m.payload)
			}
			if e["v"] != 1.0 || e["reason"] != c.reason || e["seq"] != c.seq || e["error"] == "" || e["ts_ms"] == nil {
				t.Errorf("error message %s, want reason %s and seq %v", m.payload, c.reason, c.seq)
			}
			if after := d.counter("gbdmpc_controller_rejected_total", "plant", "p1", "reason", c.reason); after != before+1 {
				t.Errorf("rejected_total{reason=%s} went %v → %v", c.reason, before, after)
			}
		})
	}
	// No action for any of them, and the daemon still serves.
	d.publish("p1", pumpMeasurement(6, now(), nil))
	if a := d.expectAction("p1", 6); a.Seq != first+1 {
		t.Errorf("action seq %d after the rejections, want %d (rejections publish no action)", a.Seq, first+1)
	}
	if f.steps != 2 {
		t.Errorf("%d steps ran, want 2", f.steps)
	}
	d.stop()
}

func TestSeveralPlants(t *testing.T) {
	testsupport.NoLeaks(t)
	cfg := testsupport.EmbeddedConfig(
		configs.Plant{ID: "north", Family: "pumpstation", Period: 2 * time.Second, Deadline: time.Second, MaxAge: 5 * time.Second},
		configs.Plant{ID: "south", Family: "pumpstation", Period: 3 * time.Second, Deadline: time.Second, MaxAge: 5 * time.Second},
	)
	f := newFakeStepper(optimalDecision)
	d := startDaemon(t, cfg, fakeDeps(f))
	ts := time.Now()
	d.publish("south", pumpMeasurement(1, ts, nil))
	a := d.expectAction("south", 1)
	if a.Plant != "south" || a.ExpiresMs-ts.UnixMilli() != 3000 {
		t.Errorf("south action %+v", a)
	}
	d.publish("north", pumpMeasurement(1, time.Now(), nil))
	if a := d.expectAction("north", 1); a.Plant != "north" || a.Seq == 0 {
		t.Errorf("north action %+v: each plant numbers its own actions", a)
	}
	d.stop()
}

// /readyz follows the session and the age of the last measurement, on the injected clock.
func TestReadiness(t *testing.T) {
	testsupport.NoLeaks(t)
	clock := newFakeClock()
	f := newFakeStepper(optimalDecision)
	deps := fakeDeps(f)
	deps.Clock = clock
	d := startDaemon(t, testsupport.EmbeddedConfig(), deps) // period 2s, max_age 5s: allowance 7s
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + d.info.HTTPAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Errorf("/livez %d", code)
	}
	code, body := get("/readyz")
	if code != 200 || !strings.Contains(body, "waiting for the first measurement") {
		t.Errorf("/readyz before any measurement: %d %s", code, body)
	}
	clock.Advance(8 * time.Second)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "no measurement since subscribing") {
		t.Errorf("/readyz with no measurement for 8s: %d %s", code, body)
	}
	d.publish("p1", pumpMeasurement(1, clock.Now(), nil))
	d.expectAction("p1", 1)
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz after a measurement: %d %s", code, body)
	}
	clock.Advance(6 * time.Second)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz 6s after a measurement (allowance 7s): %d", code)
	}
	clock.Advance(2 * time.Second)
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "last measurement") {
		t.Errorf("/readyz 8s after a measurement: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "gbdmpc_controller_solve_duration_seconds_bucket") {
		t.Errorf("/metrics %d", code)
	}
	d.stop()
}

// A reload swaps the policy between steps and changes the log level; a broken configuration or an
// unloadable policy leaves everything as it was.
func TestReload(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	deps := fakeDeps(f)
	lvl := zap.NewAtomicLevelAt(zap.InfoLevel)
	deps.Level = &lvl
	policyErr := make(chan error, 1) // the next policy load's error (none: success)
	policyDone := make(chan struct{}, 4)
	deps.Policies = func(spec, _ string, fam mpc.Family) (LoadedPolicy, error) {
		defer func() { policyDone <- struct{}{} }()
		select {
		case err := <-policyErr:
			return LoadedPolicy{}, err
		default:
		}
		return DefaultPolicyLoader(spec, "p1", fam)
	}
	cfg := testsupport.EmbeddedConfig()
	type loaded struct {
		cfg *configs.Config
		err error
	}
	loads := make(chan loaded, 1)
	deps.LoadConfig = func() (*configs.Config, error) { l := <-loads; return l.cfg, l.err }
	d := startDaemon(t, cfg, deps)
	<-policyDone // the start's own load
	d.expectStatus("p1", wire.StateOnline)

	next := *cfg
	next.Plants = slices.Clone(cfg.Plants)
	next.Plants[0].Policy = "builtin:oracle"
	next.Log.Level = "debug"
	loads <- loaded{&next, nil}
	d.reload <- struct{}{}
	d.expect(d.topic("p1", "status"), 10*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"policy_version":"builtin:oracle"`)
	})
	<-policyDone
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	if a := d.expectAction("p1", 1); a.PolicyVersion != "builtin:oracle" || a.Agent == nil {
		t.Errorf("action after reload: policy %q agent %v", a.PolicyVersion, a.Agent)
	}
	f.mu.Lock()
	if f.policy == nil {
		t.Error("SetPolicy not called with the new policy")
	}
	f.mu.Unlock()
	if lvl.Level() != zap.DebugLevel {
		t.Errorf("log level %v after reload, want debug", lvl.Level())
	}

	// Refused reloads: the plant keeps builtin:oracle.
	loads <- loaded{nil, errors.New("broken file")}
	d.reload <- struct{}{}
	bad := next
	bad.Plants = slices.Clone(next.Plants)
	bad.Plants[0].Policy = "builtin:random"
	loads <- loaded{&bad, nil} // taken only once the broken one was handled
	policyErr <- errors.New("policy does not fit")
	d.reload <- struct{}{}
	<-policyDone
	d.publish("p1", pumpMeasurement(2, time.Now(), nil))
	if a := d.expectAction("p1", 2); a.PolicyVersion != "builtin:oracle" {
		t.Errorf("policy %q after refused reloads, want builtin:oracle", a.PolicyVersion)
	}
	if n := d.counter("gbdmpc_controller_policy_reloads_total", "plant", "p1", "result", "error"); !d.counterReaches(1, "gbdmpc_controller_policy_reloads_total", "plant", "p1", "result", "error") {
		t.Errorf("policy reload errors = %v", n)
	}
	d.stop()
}

func TestWatchdogPings(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	n := &recordingNotifier{}
	deps := fakeDeps(f)
	deps.Notifier, deps.WatchdogInterval = n, 150*time.Millisecond
	d := startDaemon(t, testsupport.EmbeddedConfig(), deps)
	deadline := time.Now().Add(10 * time.Second)
	for !n.has("WATCHDOG=1") {
		if time.Now().After(deadline) {
			t.Fatal("no WATCHDOG=1 within 10s of an idle but alive loop")
		}
		d.publish("p1", pumpMeasurement(uint64(time.Now().UnixNano()), time.Now(), nil)) // a cycle kicks it too
		d.expect(d.topic("p1", "action"), 10*time.Second, nil)
	}
	d.stop()
	if !n.has("STOPPING=1") {
		t.Error("STOPPING=1 not sent on shutdown")
	}
}

// TestWatchdogPingsThroughASolveLongerThanItsInterval: a loop inside a solve is alive until its
// deadline (plus a little), so the daemon keeps pinging systemd while a solve takes many watchdog
// intervals: WatchdogSec need not exceed the plants' deadlines (systemd/README.md).
func TestWatchdogPingsThroughASolveLongerThanItsInterval(t *testing.T) {
	testsupport.NoLeaks(t)
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	f := blockingStepper(release, entered)
	n := &recordingNotifier{}
	deps := fakeDeps(f)
	deps.Notifier, deps.WatchdogInterval = n, 150*time.Millisecond
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 20 * time.Second, Deadline: 10 * time.Second})
	d := startDaemon(t, cfg, deps)
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("the step never started")
	}
	// Ten pings at a third of the interval each: the solve has outlasted three watchdog intervals.
	before, limit := n.count("WATCHDOG=1"), time.Now().Add(10*time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	for n.count("WATCHDOG=1") < before+10 && time.Now().Before(limit) {
		<-tick.C
	}
	tick.Stop()
	got := n.count("WATCHDOG=1") - before
	close(release)
	if got < 10 {
		t.Errorf("%d watchdog pings while the loop solved, want them to go on (10 within 10 s)", got)
	}
	d.expectAction("p1", 1)
	d.stop()
}

// The daemon refuses to start rather than serve a plant differently from its configuration.
func TestStartFailures(t *testing.T) {
	testsupport.NoLeaks(t)
	cases := []struct {
		name string
		mod  func(*configs.Config, *Deps)
		want string
	}{
		{"invalid config", func(c *configs.Config, _ *Deps) { c.Plants[0].Deadline = 5 * time.Second }, "must be shorter than period"},
		{"policy file missing", func(c *configs.Config, d *Deps) {
			d.Policies = func(string, string, mpc.Family) (LoadedPolicy, error) {
				return LoadedPolicy{}, errors.New("policy /x: no such file")
			}
		}, "plant p1: policy"},
		{"unknown builtin", func(c *configs.Config, _ *Deps) { c.Plants[0].Policy = "builtin:nope" }, "unknown built-in policy"},
		{"bad plant params", func(c *configs.Config, _ *Deps) { c.Plants[0].Params = map[string]any{"area": 3} }, "unknown field"},
		{"http port taken", func(c *configs.Config, _ *Deps) { c.HTTP.Listen = "256.0.0.1:1" }, "http.listen"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testsupport.EmbeddedConfig()
			deps := Deps{Notifier: &recordingNotifier{}}
			tc.mod(cfg, &deps)
			err := Run(t.Context(), cfg, deps)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

var _ mqtt.Client // the harness's client type
