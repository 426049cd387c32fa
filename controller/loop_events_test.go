package controller

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/wire"
)

// TestLanesKeepNewestMeasurements: the measurement lane never blocks its sender; when full, the
// oldest waiting measurement gives way, and every event is numbered in the order it was handed
// over, across both lanes.
func TestLanesKeepNewestMeasurements(t *testing.T) {
	ln := newLanes(2, make(chan struct{}))
	for i, seq := range []uint64{1, 2, 3} {
		if dropped := ln.deliver(inbound{env: wire.Envelope{Seq: seq}}); dropped != (i == 2) {
			t.Errorf("deliver(%d) dropped=%v", seq, dropped)
		}
		if i == 0 {
			ln.post(event{kind: evStatus})
		}
	}
	var got, nums []uint64
	for len(ln.meas) > 0 {
		m := <-ln.meas
		got, nums = append(got, m.env.Seq), append(nums, m.n)
	}
	if ev := <-ln.control; ev.n != 2 {
		t.Errorf("the status event handed over second has number %d", ev.n)
	}
	if !slices.Equal(got, []uint64{2, 3}) || !slices.Equal(nums, []uint64{3, 4}) {
		t.Errorf("kept %v numbered %v; want [2 3] numbered [3 4]", got, nums)
	}
}

// recordingOutlet stands in for the MQTT session: it keeps what the loop publishes.
type recordingOutlet struct {
	conn *mqttConn
	sent []sentMsg
}

type sentMsg struct {
	topic   string
	payload []byte
	conn    *mqttConn
}

func (o *recordingOutlet) publish(topic string, qos byte, retained bool, payload []byte) mqtt.Token {
	return o.publishOn(o.conn, topic, qos, retained, payload)
}

func (o *recordingOutlet) publishOn(cn *mqttConn, topic string, _ byte, _ bool, payload []byte) mqtt.Token {
	if !o.alive(cn) {
		return doneToken{errNoConnection}
	}
	o.sent = append(o.sent, sentMsg{topic, payload, cn})
	return doneToken{}
}

func (o *recordingOutlet) alive(cn *mqttConn) bool { return cn != nil && cn == o.conn }
func (o *recordingOutlet) current() *mqttConn      { return o.conn }

// take returns what was published on topic kind since the last call, decoded into T.
func take[T any](t *testing.T, o *recordingOutlet, kind string) []T {
	t.Helper()
	var out []T
	keep := o.sent[:0]
	for _, m := range o.sent {
		if m.topic != "gbdmpc/p1/"+kind {
			keep = append(keep, m)
			continue
		}
		var v T
		if err := json.Unmarshal(m.payload, &v); err != nil {
			t.Fatalf("%s payload %s: %v", kind, m.payload, err)
		}
		out = append(out, v)
	}
	o.sent = keep
	return out
}

// TestElectionThroughLoopEvents drives one plant loop of an HA daemon ("b") the way its session
// does — connection, subscription, status messages, peer actions and measurements handed over
// through the lanes — and runs the loop's own turn (work) in between, as its goroutine would. The
// election is the loop's plain state: it claims when the active daemon's Last Will arrives,
// becomes active when the broker hands its claim back, answers the measurement the old active
// daemon left unanswered, and tags every measurement with the role it had at the measurement's
// point of the broker's order even when it folds the messages only after a step.
func TestElectionThroughLoopEvents(t *testing.T) {
	lt := newLoopTest(t)
	l, out, clock, f, conn := lt.l, lt.out, lt.clock, lt.f, lt.conn
	meas, status, turn := lt.meas, lt.status, lt.turn
	a := member{"a", "i-a"}
	self := l.ha.self

	// Connected and subscribed; "a" holds the plant.
	l.in.post(event{kind: evConnected, conn: conn, at: clock.Now()})
	l.in.post(event{kind: evSubscribed, at: clock.Now()})
	l.in.post(status(claim{who: a, epoch: 1}))
	l.in.deliver(meas(1))
	turn()
	if !l.view.Load().standby || f.steps != 0 || len(out.sent) != 0 {
		t.Fatalf("with a active: standby=%v, %d steps, %d messages published; want a silent standby",
			l.view.Load().standby, f.steps, len(out.sent))
	}

	// a's Last Will: b claims with the next epoch at once.
	clock.Advance(100 * time.Millisecond)
	l.in.post(status(claim{who: a, epoch: 1, offline: true}))
	turn()
	claims := take[wire.Status](t, out, "status")
	if len(claims) != 1 || claims[0].Node != "b" || claims[0].Epoch != 2 {
		t.Fatalf("after a's Last Will b published %+v; want one claim of epoch 2", claims)
	}
	if !l.view.Load().standby {
		t.Fatal("active before the broker handed the claim back")
	}

	// The broker hands the claim back: b is active and answers measurement 1, which a left
	// unanswered, under epoch 2.
	l.in.post(status(claim{who: self, epoch: 2}))
	turn()
	acts := take[wire.Action](t, out, "action")
	if l.view.Load().standby || len(acts) != 1 || acts[0].MeasurementSeq != 1 || acts[0].Epoch != 2 {
		t.Fatalf("after its claim came back: standby=%v, actions %+v; want measurement 1 answered under epoch 2",
			l.view.Load().standby, acts)
	}

	// Measurement 2 arrives, then c's higher claim, then measurement 3 — all while the loop is
	// busy elsewhere. The loop answers 2 (b was active when it arrived) and keeps 3 as a standby.
	clock.Advance(time.Second)
	l.in.deliver(meas(2))
	l.in.post(status(claim{who: member{"c", "i-c"}, epoch: 3}))
	l.in.deliver(meas(3))
	turn()
	acts = take[wire.Action](t, out, "action")
	if len(acts) != 1 || acts[0].MeasurementSeq != 2 || acts[0].Epoch != 2 {
		t.Fatalf("actions %+v (steps %d, sent %d); want measurement 2 only, under epoch 2", acts, f.steps, len(out.sent))
	}
	if !l.view.Load().standby || l.core.lastStandby.env.Seq != 3 {
		t.Fatalf("after c's claim: standby=%v, kept measurement %d; want standby keeping 3", l.view.Load().standby, l.core.lastStandby.env.Seq)
	}

	// c answers measurement 3 (a peer action): no conflict, and b stays silent on later ones.
	l.in.post(event{kind: evAction, action: &wire.Action{Seq: 9, MeasurementSeq: 3, Node: "c", Instance: "i-c", Epoch: 3}, at: clock.Now()})
	clock.Advance(time.Second)
	l.in.deliver(meas(4))
	turn()
	if got := take[wire.Action](t, out, "action"); len(got) != 0 || f.steps != 2 {
		t.Fatalf("as a standby b published %+v after %d steps; want nothing after 2", got, f.steps)
	}

	// A new connection: b is not active on it until its claim is seen there — here it never is,
	// and c stays the leader, so nothing changes; and a stale offline of b's own old connection
	// is not b's to heal while a standby.
	conn2 := &mqttConn{gen: 2, lost: make(chan struct{})}
	out.conn = conn2
	l.in.post(event{kind: evConnected, conn: conn2, at: clock.Now()})
	l.in.post(event{kind: evStatus, claim: claim{who: self, epoch: 2, offline: true}, conn: conn2, at: clock.Now()})
	turn()
	if len(out.sent) != 0 || !l.view.Load().standby {
		t.Fatalf("standby published %d messages on a new connection", len(out.sent))
	}
}

// loopTest is one HA plant loop of daemon "b" driven by hand: its events go in through the lanes,
// and turn runs the loop's own work until everything handed over is taken, as its goroutine would.
type loopTest struct {
	l     *plantLoop
	out   *recordingOutlet
	clock *fakeclock.Clock
	f     *fakeStepper
	conn  *mqttConn
	meas  func(seq uint64) inbound // a valid measurement arriving now on conn
	reg   *prometheus.Registry
}

func newLoopTest(t *testing.T) *loopTest {
	t.Helper()
	return newLoopTestFor(t, configs.Plant{ID: "p1", Period: time.Second, Deadline: 800 * time.Millisecond, Mailbox: 4},
		newElection(member{"b", "i-b"}, time.Second, 2))
}

// newLoopTestFor is a loopTest of plant cfg with the election ha (nil: no HA).
func newLoopTestFor(t *testing.T, cfg configs.Plant, ha *election) *loopTest {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, []configs.Plant{{ID: "p1"}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	fam, err := registry.Default("pumpstation")
	if err != nil {
		t.Fatal(err)
	}
	lt := &loopTest{reg: reg, clock: fakeclock.New(t0), f: &fakeStepper{}, conn: &mqttConn{gen: 1, lost: make(chan struct{})}}
	lt.f.setDecide(optimalDecision)
	lt.out = &recordingOutlet{conn: lt.conn}
	lt.l = &plantLoop{cfg: cfg, family: fam, ctl: lt.f, out: lt.out, clock: lt.clock, log: zap.NewNop(), m: m,
		plants: []string{"p1"}, kick: func() {}, topic: func(kind string) string { return "gbdmpc/p1/" + kind },
		ha: ha}
	lt.l.init(LoadedPolicy{Version: "none"})
	lt.meas = func(seq uint64) inbound {
		mm, err := fam.DecodeMeasurement(pumpMeasurement(seq, lt.clock.Now(), nil))
		if err != nil {
			t.Fatal(err)
		}
		return inbound{meas: mm, env: wire.Envelope{Seq: seq, TSms: lt.clock.Now().UnixMilli()}, received: lt.clock.Now(), conn: lt.conn}
	}
	return lt
}

func (lt *loopTest) status(c claim) event {
	return event{kind: evStatus, claim: c, conn: lt.conn, at: lt.clock.Now()}
}

func (lt *loopTest) turn() {
	l := lt.l
	for !l.caughtUp() {
		l.work()
	}
}

// TestStandbyCatchingUpDoesNotClaim: a standby whose loop fell behind (here: nothing ran it for
// five periods) takes a measurement that has waited longer than the take-over bound, but the active
// daemon's answer to it is still behind in the lanes. It must not claim on the clock of now; once
// caught up, nothing is unanswered, and it stays a standby.
func TestStandbyCatchingUpDoesNotClaim(t *testing.T) {
	lt := newLoopTest(t)
	l, clock := lt.l, lt.clock
	a := member{"a", "i-a"}
	answer := func(seq uint64) event {
		return event{kind: evAction, action: &wire.Action{Seq: 100 + seq, MeasurementSeq: seq, Node: "a", Instance: "i-a", Epoch: 1}, at: clock.Now()}
	}
	l.in.post(event{kind: evConnected, conn: lt.conn, at: clock.Now()})
	l.in.post(event{kind: evSubscribed, at: clock.Now()})
	l.in.post(lt.status(claim{who: a, epoch: 1}))
	lt.turn()
	for seq := uint64(1); seq <= 3; seq++ { // a answers each within 100 ms; b's loop is not running
		l.in.deliver(lt.meas(seq))
		clock.Advance(100 * time.Millisecond)
		l.in.post(answer(seq))
		clock.Advance(900 * time.Millisecond)
	}
	clock.Advance(2 * time.Second)
	lt.turn()
	if claims := take[wire.Status](t, lt.out, "status"); len(claims) != 0 || !l.view.Load().standby {
		t.Fatalf("caught up behind a's answers, b published %+v (standby %v); want a silent standby", claims, l.view.Load().standby)
	}
	// Now a stops answering: measurement 4 waits two periods, and b claims.
	l.in.deliver(lt.meas(4))
	lt.turn()
	clock.Advance(2 * time.Second)
	l.haCheck()
	if claims := take[wire.Status](t, lt.out, "status"); len(claims) != 1 || claims[0].Epoch != 2 {
		t.Fatalf("measurement 4 unanswered for two periods: b published %+v, want one claim of epoch 2", claims)
	}
}

// TestLostPlantSendsNoErrors: the active daemon's loop falls behind; a measurement that arrived
// while it was active waits until past its deadline, and meanwhile another daemon's higher claim
// arrived. The loop still takes the measurement as this daemon's (it arrived before the claim) and
// counts the deadline miss, but sends no error message: by then the error topic is the other
// daemon's, as the fold of everything that has arrived says.
func TestLostPlantSendsNoErrors(t *testing.T) {
	lt := newLoopTest(t)
	l, clock := lt.l, lt.clock
	self := l.ha.self
	l.in.post(event{kind: evConnected, conn: lt.conn, at: clock.Now()})
	l.in.post(event{kind: evSubscribed, at: clock.Now()})
	l.in.post(lt.status(claim{who: self, epoch: 1}))
	lt.turn()
	if l.view.Load().standby {
		t.Fatal("b not active after its own claim came back")
	}
	l.in.deliver(lt.meas(1))
	clock.Advance(100 * time.Millisecond)
	l.in.post(lt.status(claim{who: member{"c", "i-c"}, epoch: 2}))
	clock.Advance(2 * time.Second) // the loop was busy: measurement 1 is past its deadline
	lt.turn()
	if n := testsupport.Counter(t, lt.reg, "gbdmpc_controller_deadline_misses_total", "plant", "p1"); n != 1 {
		t.Errorf("%v deadline misses, want 1 (measurement 1 was this daemon's)", n)
	}
	if errs := take[wire.ErrorMessage](t, lt.out, "error"); len(errs) != 0 {
		t.Errorf("b sent %+v after c took the plant", errs)
	}
	if !l.view.Load().standby {
		t.Error("b still shows itself active")
	}
}

// TestCutShortCountsANewerMeasurementsTimeOnce: a measurement answered in order ahead of a newer
// one already ends its solve a recent solve's time early (passOver); the Interrupt must not take
// that time off a second time. Recent solves took 300 ms of an 800 ms deadline: 300 ms into the
// older one's solve, with 200 ms left to its shortened end, it is not cut — the newer one still
// has its 300 ms after that end.
func TestCutShortCountsANewerMeasurementsTimeOnce(t *testing.T) {
	lt := newLoopTestFor(t, configs.Plant{ID: "p1", Period: time.Second, Deadline: 800 * time.Millisecond, Mailbox: 4}, nil)
	l, clock := lt.l, lt.clock
	cutAt300ms := map[uint64]bool{}
	lt.f.setDecide(func(m mpc.Measurement, dl time.Time) (mpc.Decision, error) {
		d, err := optimalDecision(m, dl)
		d.SolveSeconds = 0.3
		if len(l.in.meas) > 0 { // the older one of the burst
			clock.Advance(300 * time.Millisecond)
			cutAt300ms[uint64(len(cutAt300ms))] = l.cutShort()
		}
		return d, err
	})
	l.in.deliver(lt.meas(1))
	lt.turn()
	clock.Advance(time.Second)
	l.in.deliver(lt.meas(2))
	l.in.deliver(lt.meas(3))
	lt.turn()
	acts := take[wire.Action](t, lt.out, "action")
	if len(acts) != 3 || len(cutAt300ms) != 1 {
		t.Fatalf("%d actions, %d older solves; want measurements 1, 2 and 3 answered, 2 ahead of 3", len(acts), len(cutAt300ms))
	}
	if cutAt300ms[0] {
		t.Error("the older solve was cut 300 ms in, with its shortened end 200 ms away: the newer one's time was counted twice")
	}
}
