package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"gbdmpc/configs"
	"gbdmpc/internal/fault"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// Daemon-level fault injection. scenario_test.go covers one fallback from a fake stepper; these run
// the real mpc controller with a failing NLP solver, a measurement flood against a blocked loop,
// and a decision log whose directory disappears.

func faultSynthesisPayload(seq uint64, ts time.Time) []byte {
	return fmt.Appendf(nil, `{"v":1,"seq":%d,"ts_ms":%d,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}`, seq, ts.UnixMilli())
}

// waitAtLeast polls a metric until it reaches want (metrics are updated after the publish a test
// sees, and the decision log counts on its own goroutine).
func (d *testDaemon) waitAtLeast(want float64, name string, labels ...string) float64 {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		got := d.counter(name, labels...)
		if got >= want || time.Now().After(deadline) {
			return got
		}
		<-tick.C
	}
}

// TestFaultDaemonSolverDownThenRecovers: the real controller with an NLP solver that fails for three
// periods. Every period still gets an action — the shifted previous design, with the solver's
// error as the reason — the status turns degraded once, and the first good solve turns it online.
func TestFaultDaemonSolverDownThenRecovers(t *testing.T) {
	testsupport.NoLeaks(t)
	fn := &fault.NLP{Err: errors.New("injected: NLP solver down")}
	deps := Deps{NewStepper: func(f mpc.Family, o mpc.Options) (Stepper, error) {
		o.NLP = fn
		return mpc.NewController(f, o)
	}}
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "s1", Family: "synthesis", Period: 10 * time.Second, Deadline: 8 * time.Second, MaxAge: 30 * time.Second})
	d := startDaemon(t, cfg, deps)
	d.expectStatus("s1", wire.StateOnline)

	d.publish("s1", faultSynthesisPayload(1, time.Now()))
	first := d.expectAction("s1", 1)
	if first.Status != mpc.StatusOptimal {
		t.Fatalf("healthy step: %+v", first)
	}

	fn.Arm(true)
	for seq := uint64(2); seq <= 4; seq++ {
		d.publish("s1", faultSynthesisPayload(seq, time.Now()))
		a := d.expectAction("s1", seq)
		if a.Status != mpc.StatusFallback || a.Safe || a.Fallbacks != int(seq-1) || string(a.Apply) != string(first.Apply) {
			t.Errorf("seq %d: status %s safe %v fallbacks %d apply %s; want the shifted design %s",
				seq, a.Status, a.Safe, a.Fallbacks, a.Apply, first.Apply)
		}
		if !json.Valid(a.Apply) || a.Reason == "" || !strings.Contains(a.Reason, "injected: NLP solver down") {
			t.Errorf("seq %d: reason %q does not carry the solver error", seq, a.Reason)
		}
		if seq == 2 {
			if s := d.expectStatus("s1", wire.StateDegraded); !strings.Contains(s.Reason, "injected") {
				t.Errorf("degraded status reason %q", s.Reason)
			}
		}
	}
	if got := d.waitAtLeast(3, "gbdmpc_controller_fallbacks_total", "plant", "s1", "kind", "shifted"); got != 3 {
		t.Errorf("shifted fallbacks counted %v, want 3", got)
	}

	fn.Arm(false)
	d.publish("s1", faultSynthesisPayload(5, time.Now()))
	if a := d.expectAction("s1", 5); a.Status != mpc.StatusOptimal || a.Fallbacks != 0 {
		t.Errorf("recovery action %+v", a)
	}
	d.expectStatus("s1", wire.StateOnline)
	if got := d.counter("gbdmpc_controller_rejected_total", "plant", "s1"); got != 0 {
		t.Errorf("%v measurements rejected; a solver fault is not the plant's fault", got)
	}
	d.stop()
}

// TestFaultDaemonDecisionLogDirectoryGone: the decision log's directory is replaced by a file
// mid-run (root can still write into a 0500 directory, not into a file). Control goes on — every
// measurement still gets its action, the plant stays online — and the lost records are counted as
// write errors, with an alarm in the retained status until the directory is back. Every record
// gets a new segment (max_segment_age 1ns), so each one meets the file.
func TestFaultDaemonDecisionLogDirectoryGone(t *testing.T) {
	testsupport.NoLeaks(t)
	f := newFakeStepper(optimalDecision)
	cfg := testsupport.EmbeddedConfig()
	base := t.TempDir()
	cfg.DecisionLog.Dir = filepath.Join(base, "log")
	cfg.DecisionLog.MaxSegmentAge = time.Nanosecond
	d := startDaemon(t, cfg, fakeDeps(f))
	d.expectStatus("p1", wire.StateOnline)

	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	d.expectAction("p1", 1)
	if got := d.waitAtLeast(1, "gbdmpc_decisionlog_records_total"); got < 1 {
		t.Fatalf("%v records written before the fault", got)
	}

	if err := os.Rename(cfg.DecisionLog.Dir, filepath.Join(base, "away")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.DecisionLog.Dir, []byte("not a directory"), 0o640); err != nil {
		t.Fatal(err)
	}
	for seq := uint64(2); seq <= 4; seq++ {
		d.publish("p1", pumpMeasurement(seq, time.Now(), nil))
		if a := d.expectAction("p1", seq); a.Status != mpc.StatusOptimal {
			t.Errorf("seq %d: %s with the decision log down", seq, a.Status)
		}
	}
	if got := d.waitAtLeast(3, "gbdmpc_decisionlog_write_errors_total"); got < 3 {
		t.Errorf("write errors %v, want ≥ 3 (one per lost record)", got)
	}
	if n := d.waitAtLeast(4, "gbdmpc_controller_actions_total", "plant", "p1"); n != 4 {
		t.Errorf("%v actions, want 4", n)
	}
	if got := d.counter("gbdmpc_controller_rejected_total", "plant", "p1"); got != 0 {
		t.Errorf("%v measurements rejected because of the decision log", got)
	}
	// The retained status carries the alarm, and the state is still online: control is fine.
	if !d.counterReaches(1, "gbdmpc_controller_alarm", "plant", "p1") {
		t.Fatal("no alarm raised")
	}
	late := d.connect("late-"+randomHex(3), d.topic("p1", "status")) // gets the retained status
	var st wire.Status
	d.expect(d.topic("p1", "status"), 10*time.Second, func(m received) bool {
		st = wire.Status{}
		return m.retained && json.Unmarshal(m.payload, &st) == nil && st.Alarm != ""
	})
	late.Disconnect(250)
	if st.State != wire.StateOnline || !strings.Contains(st.Alarm, "decision log cannot write") {
		t.Errorf("retained status %q alarm %q with the decision log down, want online with the alarm", st.State, st.Alarm)
	}

	// The directory comes back: the next record is written and the alarm clears.
	if err := os.Remove(cfg.DecisionLog.Dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(base, "away"), cfg.DecisionLog.Dir); err != nil {
		t.Fatal(err)
	}
	d.publish("p1", pumpMeasurement(5, time.Now(), nil))
	d.expectAction("p1", 5)
	d.expect(d.topic("p1", "status"), 10*time.Second, func(m received) bool {
		st = wire.Status{}
		return json.Unmarshal(m.payload, &st) == nil && st.Alarm == "" && st.State == wire.StateOnline
	})
	d.stop()
}

// TestFaultDaemonBrokerDownAtStart: the daemon starts while its broker is not up. It keeps
// retrying, is not ready (no READY=1, /readyz 503) and publishes nothing; when the broker comes up
// it connects, becomes ready and closes the loop.
func TestFaultDaemonBrokerDownAtStart(t *testing.T) {
	testsupport.NoLeaks(t)
	broker := testsupport.NewMosquitto(t)
	defer broker.Kill()
	cfg := testsupport.EmbeddedConfig()
	cfg.Broker = configs.Broker{URL: broker.URL(), ClientID: "gbdmpc-late-broker", MaxReconnectInterval: 200 * time.Millisecond}
	cfg.ApplyDefaults()
	f := newFakeStepper(optimalDecision)
	deps := fakeDeps(f)
	core, logs := observer.New(zapcore.InfoLevel)
	deps.Logger = zap.New(core)
	deps.Registry = prometheus.NewRegistry()
	notifier := &recordingNotifier{}
	deps.Notifier = notifier
	started := make(chan Info, 1)
	deps.Started = func(i Info) { started <- i }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, deps) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	// A connection attempt fails (the daemon logs why) and the daemon is not ready.
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	for logs.FilterMessage("mqtt connection failed").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no failed connection attempt logged within 20s")
		}
		<-tick.C
	}
	tick.Stop()
	select {
	case <-started:
		t.Fatal("ready without a broker")
	case err := <-done:
		t.Fatalf("Run returned without a broker: %v", err)
	default:
	}
	if notifier.has("READY=1") {
		t.Fatal("READY=1 without a broker")
	}

	broker.Start()
	var info Info
	select {
	case info = <-started:
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("not ready within 20s of the broker coming up")
	}
	if !notifier.has("READY=1") {
		t.Error("READY=1 not sent")
	}
	d := &testDaemon{t: t, cfg: cfg, info: info, reg: deps.Registry, msgs: make(chan received, 64), cancel: func() {}, done: make(chan error, 1)}
	d.done <- nil
	d.client = d.connect("gbdmpc-observer-late", cfg.TopicPrefix+"/#")
	defer d.client.Disconnect(50)
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	if a := d.expectAction("p1", 1); a.Status != mpc.StatusOptimal {
		t.Errorf("first action %s", a.Status)
	}
}

// TestFaultDaemonBurstBehindSlowSolves: measurements arrive far faster than the period while a
// solve blocks the loop, and the solves report how long they take. The mailbox keeps the newest
// `box` of them, every dropped one counted, and no queue grows. When the recent solves leave time
// to answer the survivors in order before the newest's deadline, every survivor is answered in
// order, each older one's solve ending early enough to leave the newest the time of a recent
// solve; when they do not, the older ones are passed over with an error message (reason
// superseded) and the newest is solved in its time.
func TestFaultDaemonBurstBehindSlowSolves(t *testing.T) {
	cases := []struct {
		name       string
		box, flood int
		solve      time.Duration // what every step reports (the deadline is 10 s less 1 s reserve)
		actions    []uint64
	}{
		{"a flood behind fast solves: every survivor in order", 3, 25, 10 * time.Millisecond, []uint64{1, 23, 24, 25}},
		{"solves of 2 s: all in order", 4, 9, 2 * time.Second, []uint64{1, 6, 7, 8, 9}},
		{"solves of 6 s: only the newest", 4, 9, 6 * time.Second, []uint64{1, 9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testsupport.NoLeaks(t)
			gate := make(chan struct{})
			entered := make(chan struct{}, 1)
			var mu sync.Mutex
			var deadlines []time.Time
			f := &fakeStepper{}
			var once sync.Once
			f.setDecide(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
				once.Do(func() {
					entered <- struct{}{}
					<-gate
				})
				mu.Lock()
				deadlines = append(deadlines, dl)
				mu.Unlock()
				d, err := optimalDecision(m, dl)
				d.SolveSeconds = c.solve.Seconds()
				return d, err
			})
			cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 20 * time.Second,
				Deadline: 10 * time.Second, MaxAge: 30 * time.Second, Mailbox: c.box})
			d := startDaemon(t, cfg, fakeDeps(f))
			released := false
			release := func() {
				if !released {
					released = true
					close(gate)
				}
			}
			defer release() // a failing test must still let the loop go, or Run never returns

			d.publish("p1", pumpMeasurement(1, time.Now(), nil))
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the first step never started")
			}
			for seq := uint64(2); seq <= uint64(c.flood); seq++ {
				d.publish("p1", pumpMeasurement(seq, time.Now(), nil))
			}
			// The last drop comes with the last measurement's arrival: all are in before the release.
			dropped := float64(c.flood - 1 - c.box)
			if got := d.waitAtLeast(dropped, "gbdmpc_controller_mailbox_dropped_total", "plant", "p1"); got != dropped {
				t.Fatalf("mailbox dropped %v, want %v", got, dropped)
			}
			release()
			for _, seq := range c.actions {
				d.expectAction("p1", seq)
			}
			if n := d.waitAtLeast(float64(len(c.actions)), "gbdmpc_controller_actions_total", "plant", "p1"); n != float64(len(c.actions)) {
				t.Errorf("%v actions, want %d", n, len(c.actions))
			}
			if got := d.counter("gbdmpc_controller_mailbox_dropped_total", "plant", "p1"); got != dropped {
				t.Errorf("mailbox dropped %v after the flood drained, want %v", got, dropped)
			}
			passed := float64(c.box - (len(c.actions) - 1)) // survivors not answered
			if got := d.counter("gbdmpc_controller_rejected_total", "plant", "p1", "reason", wire.ReasonSuperseded); got != passed {
				t.Errorf("%v measurements passed over, want %v", got, passed)
			}
			mu.Lock()
			dls := append([]time.Time(nil), deadlines...)
			mu.Unlock()
			if len(dls) != len(c.actions) {
				t.Fatalf("%d steps, want %d", len(dls), len(c.actions))
			}
			// Every older survivor's solve ends a recent solve's time before the newest's deadline
			// (the burst arrived within milliseconds, so their deadlines are within those too).
			newest := dls[len(dls)-1]
			for i := 1; i < len(dls)-1; i++ {
				if lead := newest.Sub(dls[i]); lead < c.solve-500*time.Millisecond || lead > c.solve+500*time.Millisecond {
					t.Errorf("step %d: its solve ends %v before the newest's deadline, want about %v", i, lead, c.solve)
				}
			}
			d.stop()
		})
	}
}

// TestFaultDaemonSolveCutShortByANewerMeasurement: a measurement arrives while the one before it
// is being solved. The solve in hand is cut short through its Interrupt — its action goes out at
// once, saying so — and the newer measurement gets its own solve and action. After recent solves
// that used nearly the whole deadline the cut comes at once; without any history it comes when
// the solve has used half of its time, leaving the other half to the newer one.
func TestFaultDaemonSolveCutShortByANewerMeasurement(t *testing.T) {
	cases := []struct {
		name     string
		history  bool          // a first step that reports 90 % of the deadline used
		deadline time.Duration // the newer one arrives at once; the cut comes at once or at half
		minWait  time.Duration // the least time the solve in hand runs before its cut
	}{
		{"after slow solves: at once", true, 10 * time.Second, 0},
		{"without history: at half its time", false, time.Second, 300 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testsupport.NoLeaks(t)
			var spy interruptSpy
			entered := make(chan time.Time, 4)
			var waited time.Duration
			f := &fakeStepper{}
			f.setDecide(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
				var in struct {
					Level float64 `json:"level_m"`
				}
				if err := json.Unmarshal(m.Instance(), &in); err != nil {
					return mpc.Decision{}, err
				}
				d, err := optimalDecision(m, dl)
				switch in.Level {
				case 3.1: // a solve that used 90 % of the time it had
					d.SolveSeconds = 0.9 * c.deadline.Seconds()
				case 3.2: // a solver that looks at its Interrupt until it says stop
					t0 := time.Now()
					entered <- t0
					if err := spy.wait(dl); err != nil {
						return d, err
					}
					waited = time.Since(t0)
					d.Status, d.SolveSeconds = mpc.StatusGap, 0.05
				}
				return d, err
			})
			cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 2 * c.deadline,
				Deadline: c.deadline, MaxAge: 30 * time.Second})
			d := startDaemon(t, cfg, spy.deps(f))
			if spy.interrupt == nil {
				t.Fatal("the controller was built without an Interrupt")
			}
			seq := uint64(1)
			if c.history {
				d.publish("p1", pumpMeasurement(seq, time.Now(), map[string]any{"level_m": 3.1}))
				d.expectAction("p1", seq)
				seq++
			}
			d.publish("p1", pumpMeasurement(seq, time.Now(), map[string]any{"level_m": 3.2}))
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("the step never started")
			}
			d.publish("p1", pumpMeasurement(seq+1, time.Now(), nil))
			if a := d.expectAction("p1", seq); a.Status != mpc.StatusGap || !strings.Contains(a.Reason, "cut short") {
				t.Errorf("action for %d: status %s, reason %q; want gap, cut short", seq, a.Status, a.Reason)
			}
			d.expectAction("p1", seq+1)
			if !d.counterReaches(1, "gbdmpc_controller_solves_cut_short_total", "plant", "p1") {
				t.Errorf("cut-short solves %v, want 1", d.counter("gbdmpc_controller_solves_cut_short_total", "plant", "p1"))
			}
			d.stop()
			if waited < c.minWait {
				t.Errorf("the solve was cut after %v, want at least %v", waited, c.minWait)
			}
		})
	}
}

// TestFaultDaemonStopCutsTheSolveShort: the daemon stops while a plant loop is inside a solve
// (SIGTERM under systemd). The solve's Interrupt says stop, so shutdown waits for one look at the
// time, not for the solve's deadline.
func TestFaultDaemonStopCutsTheSolveShort(t *testing.T) {
	testsupport.NoLeaks(t)
	var spy interruptSpy
	entered := make(chan struct{}, 1)
	var interrupted atomic.Bool
	f := &fakeStepper{}
	f.setDecide(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
		entered <- struct{}{}
		if err := spy.wait(dl); err != nil {
			return mpc.Decision{}, err
		}
		interrupted.Store(true)
		d, err := optimalDecision(m, dl)
		d.Status = mpc.StatusGap
		return d, err
	})
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 40 * time.Second,
		Deadline: 30 * time.Second, MaxAge: 30 * time.Second})
	d := startDaemon(t, cfg, spy.deps(f))
	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the step never started")
	}
	d.stop() // fails the test if Run takes 20 s; the solve's deadline is 27 s away
	if !interrupted.Load() {
		t.Error("the solve in hand was not interrupted by the stop")
	}
	if n := d.counter("gbdmpc_controller_solves_cut_short_total", "plant", "p1"); n != 1 {
		t.Errorf("cut-short solves %v, want 1", n)
	}
}

// interruptSpy keeps the Interrupt the daemon gives its plant's solves (deps), for a fake solver
// that looks at it as the engine does (wait).
type interruptSpy struct{ interrupt func() bool }

func (s *interruptSpy) deps(f *fakeStepper) Deps {
	d := fakeDeps(f)
	d.NewStepper = func(_ mpc.Family, o mpc.Options) (Stepper, error) {
		s.interrupt = o.Settings.Interrupt
		return f, nil
	}
	return d
}

// wait looks at the Interrupt every 2 ms until it says stop, and fails at dl.
func (s *interruptSpy) wait(dl time.Time) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !s.interrupt() {
		if time.Now().After(dl) {
			return errors.New("never interrupted")
		}
		<-tick.C
	}
	return nil
}
