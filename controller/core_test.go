package controller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// The core's tests drive core.Step by hand on a clock that moves only when a test moves it: no
// broker, no goroutine, no solver. Each table names the rule it checks (core.go) and states the
// inputs — measurements' ages and arrivals, solve times, claims — and what must come out.

// stubMeas stands for a plant's measurement: the core only carries it to the solve.
type stubMeas uint64

func (stubMeas) Problem() (*gbd.Problem, error) { return nil, nil }
func (s stubMeas) Instance() json.RawMessage    { return json.RawMessage(`{}`) }

var coreT0 = time.UnixMilli(1_700_000_000_000)

// corePlant: period 1 s, deadline 800 ms, reserve 50 ms, as a plant of the examples.
func corePlant() configs.Plant {
	return configs.Plant{ID: "p1", Period: time.Second, Deadline: 800 * time.Millisecond, DeadlineReserve: 50 * time.Millisecond,
		MaxAge: time.Second, Mailbox: 4}
}

// rig is a core with a clock, the connection in use, and everything the core asked to publish,
// count and record, in order.
type rig struct {
	t        *testing.T
	c        *core
	now      time.Time
	conn     *mqttConn
	caughtUp bool
	dlAlarm  string

	out     []output
	metrics map[metricKind]float64
	labels  map[string]float64 // kind/label → sum, for labelled counters
	solves  []*solveOrder
	records int
	kicks   int
}

func newRig(t *testing.T, cfg configs.Plant, ha *election) *rig {
	r := &rig{t: t, now: coreT0, conn: &mqttConn{gen: 1}, caughtUp: true,
		metrics: map[metricKind]float64{}, labels: map[string]float64{}}
	r.c = newCore(cfg, []string{cfg.ID}, ha, func() json.RawMessage { return json.RawMessage(`{"safe":true}`) },
		LoadedPolicy{Version: "none"})
	return r
}

func (r *rig) env() loopEnv { return loopEnv{now: r.now, caughtUp: r.caughtUp, current: r.conn} }

func (r *rig) advance(d time.Duration) { r.now = r.now.Add(d) }

// take notes what a ready asks for, as the driver would do it, and returns it.
func (r *rig) take(rd ready) ready {
	r.out = append(r.out, rd.out...)
	for _, m := range rd.metrics {
		switch m.kind {
		case mHAActive, mAlarm:
			r.metrics[m.kind] = m.v
		default:
			r.metrics[m.kind] += m.v
		}
		if m.label != "" {
			r.labels[m.label] += m.v
		}
	}
	if rd.finish != nil {
		r.records++
	}
	if rd.kick {
		r.kicks++
	}
	if rd.recheck {
		r.take(r.c.Step(evAlarm{dlAlarm: r.dlAlarm}, r.env()))
	}
	return rd
}

// solver is what a solve does in a test: how long it takes, and its decision (nil: optimal).
type solver struct {
	took time.Duration
	d    *mpc.Decision
	err  error
	// cutAfter, when set, has the driver's Interrupt ask the core's cut rule this far into the
	// solve, with a newer measurement waiting; the solve ends there if the rule says so.
	cutAfter time.Duration
	stopping bool
}

func optimal(solveSeconds float64) *mpc.Decision {
	return &mpc.Decision{Status: mpc.StatusOptimal, Apply: json.RawMessage(`{"u":1}`), Plan: json.RawMessage(`{"steps":[]}`),
		Y: []float64{1}, Objective: 1, LBD: 1, UBD: 1, Iterations: 3, SolveSeconds: solveSeconds}
}

// step hands the core an event and carries out what it returns, running every wait (a core is
// always free unless noSlot) and solve it starts with s.
func (r *rig) step(ev coreEvent, s solver, noSlot bool) {
	rd := r.take(r.c.Step(ev, r.env()))
	for rd.wait != nil || rd.solve != nil {
		if rd.wait != nil {
			if noSlot {
				r.now = rd.wait.by
			}
			rd = r.take(r.c.Step(evSlot{ok: !noSlot}, r.env()))
			continue
		}
		o := rd.solve
		r.solves = append(r.solves, o)
		cut := false
		took := s.took
		if s.cutAfter > 0 && s.cutAfter < took {
			if o.cut.cut(r.now.Add(s.cutAfter), true, false) {
				cut, took = true, s.cutAfter
			}
		}
		if s.stopping {
			cut = o.cut.cut(r.now, false, true)
		}
		r.advance(took)
		d := s.d
		if d == nil {
			d = optimal(took.Seconds())
		}
		dc := *d
		rd = r.take(r.c.Step(evSolved{d: &dc, err: s.err, cut: cut, stopping: s.stopping, connAlive: true, dlAlarm: r.dlAlarm}, r.env()))
	}
}

// measure hands the core measurement seq, taken ageMs old, received now, at its turn.
func (r *rig) measure(seq uint64, age time.Duration, newer bool, s solver) {
	m := inbound{meas: stubMeas(seq), env: wire.Envelope{Seq: seq, TSms: r.now.Add(-age).UnixMilli()}, received: r.now, conn: r.conn}
	r.step(evMeasure{m: m, newerWaiting: newer}, s, false)
}

// drain returns what was published on kind since the last drain of it, decoded into T.
func drain[T any](r *rig, kind string) []T {
	var got []T
	keep := r.out[:0]
	for _, o := range r.out {
		if o.kind != kind {
			keep = append(keep, o)
			continue
		}
		var v T
		switch {
		case o.rej != nil:
			b, _ := json.Marshal(wire.ErrorOf(o.rej, "p1", 0, 0))
			if err := json.Unmarshal(b, &v); err != nil {
				r.t.Fatal(err)
			}
		default:
			if err := json.Unmarshal(o.payload, &v); err != nil {
				r.t.Fatalf("%s payload %s: %v", kind, o.payload, err)
			}
		}
		got = append(got, v)
	}
	r.out = keep
	return got
}

// TestCoreBudget: the solve's end is the earlier of receipt + deadline and the action's expiry less
// the reserve, less the reserve again; a measurement whose solve could not end before that is
// rejected at its turn (it waited behind earlier steps), and one for which no core came in time is
// rejected for that.
func TestCoreBudget(t *testing.T) {
	cases := []struct {
		name    string
		age     time.Duration // of ts_ms at receipt
		waited  time.Duration // between receipt and its turn
		noSlot  bool
		solveBy time.Duration // after receipt; 0: no solve
		reason  string        // of the rejection, "" none
		msg     string
	}{
		{"fresh: deadline from receipt", 0, 0, false, 750 * time.Millisecond, "", ""},
		{"old: expiry binds", 600 * time.Millisecond, 0, false, 300 * time.Millisecond, "", ""},
		{"waited, still in time", 0, 700 * time.Millisecond, false, 750 * time.Millisecond, "", ""},
		{"waited past its solve-by", 0, 750 * time.Millisecond, false, 0, wire.ReasonDeadline, "behind earlier steps"},
		{"old and waited past the expiry's solve-by", 850 * time.Millisecond, 60 * time.Millisecond, false, 0, wire.ReasonDeadline, "expires at"},
		{"no free core in time", 0, 0, true, 0, wire.ReasonDeadline, "free core"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, corePlant(), nil)
			received := r.now
			m := inbound{meas: stubMeas(1), env: wire.Envelope{Seq: 1, TSms: r.now.Add(-c.age).UnixMilli()}, received: received}
			r.advance(c.waited)
			r.step(evMeasure{m: m}, solver{took: 10 * time.Millisecond}, c.noSlot)
			errs := drain[wire.ErrorMessage](r, "error")
			acts := drain[wire.Action](r, "action")
			if c.reason == "" {
				if len(r.solves) != 1 || !r.solves[0].solveBy.Equal(received.Add(c.solveBy)) || len(errs) != 0 || len(acts) != 1 {
					t.Fatalf("solves %d, errors %+v, actions %d; want one solve to end %v after receipt", len(r.solves), errs, len(acts), c.solveBy)
				}
				if a := acts[0]; a.ExpiresMs != m.env.TSms+1000 || a.DeadlineSeconds != 0.8 {
					t.Errorf("action expires %d, deadline %v s; want ts_ms + period, 0.8", a.ExpiresMs, a.DeadlineSeconds)
				}
				return
			}
			if len(r.solves) != 0 || len(errs) != 1 || errs[0].Reason != c.reason || !strings.Contains(errs[0].Error, c.msg) ||
				r.metrics[mDeadlineMiss] != 1 || r.c.actionSeq != 0 {
				t.Fatalf("solves %d, errors %+v, misses %v, action seq %d; want no solve, one %s error saying %q, one miss, no seq used",
					len(r.solves), errs, r.metrics[mDeadlineMiss], r.c.actionSeq, c.reason, c.msg)
			}
		})
	}
}

// TestCoreWithholdsLateActions: an action whose step ends after the effective deadline, or at or
// after its expiry, is never published; it is counted as a deadline miss with an error message,
// and its decision record is still finished.
func TestCoreWithholdsLateActions(t *testing.T) {
	cases := []struct {
		name      string
		age, took time.Duration
		published bool
	}{
		{"in time", 0, 700 * time.Millisecond, true},
		{"into the reserve, still before the deadline", 0, 790 * time.Millisecond, true},
		{"past the deadline", 0, 810 * time.Millisecond, false},
		{"old, within the expiry less the reserve", 800 * time.Millisecond, 140 * time.Millisecond, true},
		{"old, into the expiry's reserve", 800 * time.Millisecond, 160 * time.Millisecond, false},
		{"old, past the expiry", 800 * time.Millisecond, 210 * time.Millisecond, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, corePlant(), nil)
			r.measure(7, c.age, false, solver{took: c.took})
			acts := drain[wire.Action](r, "action")
			errs := drain[wire.ErrorMessage](r, "error")
			for _, a := range acts {
				if a.TSms >= a.ExpiresMs {
					t.Errorf("action published at %d, at or after its expiry %d", a.TSms, a.ExpiresMs)
				}
			}
			if r.records != 1 {
				t.Errorf("%d decision records finished, want 1", r.records)
			}
			if c.published {
				if len(acts) != 1 || len(errs) != 0 || r.metrics[mDeadlineMiss] != 0 || r.kicks != 1 {
					t.Fatalf("%d actions, errors %+v, %v misses, %d kicks; want one action", len(acts), errs, r.metrics[mDeadlineMiss], r.kicks)
				}
				return
			}
			if len(acts) != 0 || len(errs) != 1 || errs[0].Reason != wire.ReasonDeadline || !strings.Contains(errs[0].Error, "action withheld") ||
				r.metrics[mDeadlineMiss] != 1 || r.metrics[mActions] != 0 {
				t.Fatalf("%d actions, errors %+v, %v misses; want the action withheld with one deadline error and one miss", len(acts), errs, r.metrics[mDeadlineMiss])
			}
		})
	}
}

// TestCorePassOver: a measurement whose turn comes while a newer one already waits is answered when
// the recent solves say both fit — its solve then ends a recent solve's time early — and passed over
// (reason superseded) when they do not. Without history nothing is passed over.
func TestCorePassOver(t *testing.T) {
	cases := []struct {
		name        string
		history     time.Duration // the solve time of an earlier step (0: none)
		waited      time.Duration // the older one's wait before its turn
		passed      bool
		shortenedBy time.Duration // solveBy before its own end
	}{
		{"no history", 0, 0, false, 0},
		{"both fit", 200 * time.Millisecond, 0, false, 200 * time.Millisecond},
		{"both fit just", 375 * time.Millisecond, 0, false, 375 * time.Millisecond},
		{"no room for both", 400 * time.Millisecond, 0, true, 0},
		{"waited, no room left", 200 * time.Millisecond, 400 * time.Millisecond, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, corePlant(), nil)
			if c.history > 0 {
				r.measure(1, 0, false, solver{took: c.history})
				drain[wire.Action](r, "action")
				r.advance(time.Second)
			}
			r.solves = nil
			received := r.now
			m := inbound{meas: stubMeas(2), env: wire.Envelope{Seq: 2, TSms: r.now.UnixMilli()}, received: received}
			r.advance(c.waited)
			r.step(evMeasure{m: m, newerWaiting: true}, solver{took: 10 * time.Millisecond}, false)
			errs := drain[wire.ErrorMessage](r, "error")
			if c.passed {
				if len(r.solves) != 0 || len(errs) != 1 || errs[0].Reason != wire.ReasonSuperseded {
					t.Fatalf("solves %d, errors %+v; want passed over as superseded", len(r.solves), errs)
				}
				return
			}
			end := received.Add(750 * time.Millisecond)
			if len(r.solves) != 1 || len(errs) != 0 || !r.solves[0].solveBy.Equal(end.Add(-c.shortenedBy)) || !r.solves[0].cut.end.Equal(end) {
				t.Fatalf("solves %+v, errors %+v; want one solve to end %v before its own end", r.solves, errs, c.shortenedBy)
			}
		})
	}
}

// TestCoreCutRule: a solve in hand ends early when the daemon stops, or when a newer measurement
// waits and the time left to this one's end is no more than the newer one's likely need: the
// slowest recent solve, or this solve's own time so far when longer.
func TestCoreCutRule(t *testing.T) {
	start := coreT0
	rule := cutRule{start: start, end: start.Add(750 * time.Millisecond), est: 400 * time.Millisecond}
	cases := []struct {
		at              time.Duration
		newer, stopping bool
		cut             bool
	}{
		{100 * time.Millisecond, false, false, false},
		{100 * time.Millisecond, false, true, true},
		{100 * time.Millisecond, true, false, false},
		{349 * time.Millisecond, true, false, false},
		{350 * time.Millisecond, true, false, true},
		{700 * time.Millisecond, false, false, false},
	}
	for _, c := range cases {
		if got := rule.cut(start.Add(c.at), c.newer, c.stopping); got != c.cut {
			t.Errorf("at %v, newer %v, stopping %v: cut %v, want %v", c.at, c.newer, c.stopping, got, c.cut)
		}
	}
	// No history: the solve's own time so far stands for the newer one's need.
	fresh := cutRule{start: start, end: start.Add(750 * time.Millisecond)}
	if fresh.cut(start.Add(300*time.Millisecond), true, false) || !fresh.cut(start.Add(375*time.Millisecond), true, false) {
		t.Error("without history the cut does not come at half the budget")
	}
}

// TestCoreBurstBehindSlowSolves: a burst arrives behind solves that take most of the deadline. The
// older measurements are passed over or cut short, every action that goes out is in time, and the
// newest measurement is always answered.
func TestCoreBurstBehindSlowSolves(t *testing.T) {
	r := newRig(t, corePlant(), nil)
	r.measure(1, 0, false, solver{took: 500 * time.Millisecond})
	drain[wire.Action](r, "action")
	r.advance(600 * time.Millisecond)
	// 2, 3 and 4 arrive at once while nothing runs: 2 and 3 have a newer one behind them.
	received := r.now
	for seq := uint64(2); seq <= 4; seq++ {
		m := inbound{meas: stubMeas(seq), env: wire.Envelope{Seq: seq, TSms: received.UnixMilli()}, received: received}
		r.step(evMeasure{m: m, newerWaiting: seq < 4}, solver{took: 500 * time.Millisecond, cutAfter: 100 * time.Millisecond}, false)
	}
	acts := drain[wire.Action](r, "action")
	errs := drain[wire.ErrorMessage](r, "error")
	if len(acts) != 1 || acts[0].MeasurementSeq != 4 || len(errs) != 2 || errs[0].Reason != wire.ReasonSuperseded || errs[1].Reason != wire.ReasonSuperseded {
		t.Fatalf("actions %+v, errors %+v; want 2 and 3 superseded, 4 answered", acts, errs)
	}
	if acts[0].TSms > received.Add(800*time.Millisecond).UnixMilli() {
		t.Errorf("action for 4 at %d, after its deadline", acts[0].TSms)
	}
	// Now a newer one arrives during a slow solve: the solve is cut short and says so.
	r.advance(time.Second)
	r.measure(5, 0, false, solver{took: 700 * time.Millisecond, cutAfter: 400 * time.Millisecond})
	acts = drain[wire.Action](r, "action")
	if len(acts) != 1 || !strings.Contains(acts[0].Reason, "solve cut short: a newer measurement was waiting") || r.metrics[mCutShort] != 1 {
		t.Fatalf("actions %+v, cut %v; want one action cut short", acts, r.metrics[mCutShort])
	}
	// A stopping daemon cuts the solve in hand whatever waits.
	r.advance(time.Second)
	r.measure(6, 0, false, solver{took: 10 * time.Millisecond, stopping: true})
	if acts = drain[wire.Action](r, "action"); len(acts) != 1 || !strings.Contains(acts[0].Reason, "the daemon is stopping") {
		t.Fatalf("actions %+v; want the solve cut short because the daemon is stopping", acts)
	}
}

// TestCoreStatusAndAlarms: the status follows the steps — degraded on a fallback or a relaxed action,
// online again after a certified one — and publishes only on a change; the alarm joins a relaxed
// step's shortfall and the decision log's health, and is raised and cleared once each.
func TestCoreStatusAndAlarms(t *testing.T) {
	fallback := &mpc.Decision{Status: mpc.StatusFallback, Reason: "solve ended no_solution", Safe: true, Fallbacks: 1}
	relaxed := optimal(0.01)
	relaxed.Relaxed = &mpc.Relaxation{Limit: "level_min_m", Shortfall: "level below 0.5 m"}
	type want struct {
		state, alarm string // of the status published ("": none published)
	}
	steps := []struct {
		name    string
		d       *mpc.Decision
		err     error
		dlAlarm string
		tick    bool
		want    want
	}{
		{"optimal", nil, nil, "", false, want{}},
		{"solver down: fallback", fallback, nil, "", false, want{wire.StateDegraded, ""}},
		{"still down", fallback, nil, "", false, want{}},
		{"recovered", nil, nil, "", false, want{wire.StateOnline, ""}},
		{"relaxed", relaxed, nil, "", false, want{wire.StateDegraded, "hard limits cannot be held: level below 0.5 m"}},
		{"servable again", nil, nil, "", false, want{wire.StateOnline, ""}},
		{"decision log gone", nil, nil, "decision log: directory gone", true, want{wire.StateOnline, "decision log: directory gone"}},
		{"decision log back", nil, nil, "", true, want{wire.StateOnline, ""}},
		{"step error", nil, errors.New("boom"), "", false, want{}},
	}
	r := newRig(t, corePlant(), nil)
	for i, s := range steps {
		r.dlAlarm = s.dlAlarm
		if s.tick {
			r.take(r.c.Step(evTick{dlAlarm: s.dlAlarm}, r.env()))
		} else {
			r.measure(uint64(i+1), 0, false, solver{took: 10 * time.Millisecond, d: s.d, err: s.err})
		}
		sts := drain[wire.Status](r, "status")
		switch {
		case s.want.state == "" && len(sts) != 0:
			t.Fatalf("%s: published %+v, want no status", s.name, sts)
		case s.want.state != "" && (len(sts) != 1 || sts[0].State != s.want.state || sts[0].Alarm != s.want.alarm):
			t.Fatalf("%s: published %+v, want %s with alarm %q", s.name, sts, s.want.state, s.want.alarm)
		}
		acts := drain[wire.Action](r, "action")
		errs := drain[wire.ErrorMessage](r, "error")
		if s.err != nil && (len(acts) != 0 || len(errs) != 1 || errs[0].Reason != wire.ReasonStep) {
			t.Fatalf("%s: actions %+v, errors %+v; want one step error", s.name, acts, errs)
		}
	}
	if r.labels["safe"] != 2 || r.metrics[mRelaxed] != 1 || r.metrics[mAlarm] != 0 {
		t.Errorf("safe fallbacks %v, relaxed %v, alarm gauge %v; want 2, 1, 0", r.labels["safe"], r.metrics[mRelaxed], r.metrics[mAlarm])
	}
	// A step that failed used no action number: the actions' seqs have no gap.
	if r.c.actionSeq != uint64(len(steps)-3) {
		t.Errorf("action seq %d after %d actions", r.c.actionSeq, len(steps)-3)
	}
}

// TestCorePolicySwap: a new policy shows on the status at once and in the next action, whose agent
// counts are then reported.
func TestCorePolicySwap(t *testing.T) {
	r := newRig(t, corePlant(), nil)
	r.take(r.c.Step(evPolicy{p: LoadedPolicy{Version: "v2", Policy: gbd.Policy(nil)}}, r.env()))
	if sts := drain[wire.Status](r, "status"); len(sts) != 1 || sts[0].PolicyVersion != "v2" || sts[0].Reason != "policy v2" {
		t.Fatalf("status %+v, want one naming policy v2", sts)
	}
	d := optimal(0.01)
	d.Agent = gbd.AgentStats{Proposed: 3, Accepted: 2}
	r.c.agent = true // a loaded policy (its value is the solver's business)
	r.measure(1, 0, false, solver{took: 10 * time.Millisecond, d: d})
	acts := drain[wire.Action](r, "action")
	if len(acts) != 1 || acts[0].PolicyVersion != "v2" || acts[0].Agent == nil || acts[0].Agent.Proposed != 3 || r.metrics[mProposals] != 3 || r.metrics[mAccepted] != 2 {
		t.Fatalf("actions %+v, proposals %v; want the agent's counts under v2", acts, r.metrics[mProposals])
	}
}

// The HA rig: daemon "b" of a group, take-over after two periods.
var coreSelf = member{"b", "i-b"}

func newHARig(t *testing.T) *rig {
	r := newRig(t, corePlant(), newElection(coreSelf, time.Second, 2))
	r.control(event{kind: evConnected, conn: r.conn})
	r.control(event{kind: evSubscribed})
	return r
}

// control hands the core a control event arriving now on the rig's connection, folded ahead and
// then at its turn, as the driver does when nothing else waits.
func (r *rig) control(ev event) {
	ev.at = r.now
	if ev.conn == nil {
		ev.conn = r.conn
	}
	r.c.foresee(ev)
	r.step(evControl{ev: ev, connAlive: ev.conn == r.conn}, solver{took: 10 * time.Millisecond}, false)
}

func (r *rig) claimOf(who member, epoch uint64, offline bool) {
	r.control(event{kind: evStatus, claim: claim{who: who, epoch: epoch, offline: offline}})
}

// claimBack hands the core back the claim it published last, as the broker does.
func (r *rig) claimBack() {
	r.t.Helper()
	sts := drain[wire.Status](r, "status")
	if len(sts) == 0 {
		r.t.Fatal("no claim to hand back")
	}
	st := sts[len(sts)-1]
	r.claimOf(member{st.Node, st.Instance}, st.Epoch, false)
}

// TestCoreHATakeOvers: the election's consequences, scenario by scenario — who answers, under
// which epoch and action numbers, and when a standby claims.
func TestCoreHATakeOvers(t *testing.T) {
	a := member{"a", "i-a"}
	t.Run("active went offline: claim at once, answer its orphan under the new epoch", func(t *testing.T) {
		r := newHARig(t)
		r.claimOf(a, 1, false)
		r.measure(1, 0, false, solver{took: 10 * time.Millisecond})
		if len(r.solves) != 0 || len(r.out) != 0 || r.kicks != 1 {
			t.Fatalf("as a standby: %d solves, published %+v; want nothing but a kick", len(r.solves), r.out)
		}
		r.advance(100 * time.Millisecond)
		r.claimOf(a, 1, true) // a's Last Will
		sts := drain[wire.Status](r, "status")
		if len(sts) != 1 || sts[0].Epoch != 2 || sts[0].Node != "b" || !strings.Contains(sts[0].Reason, "went offline") {
			t.Fatalf("after a's Last Will: %+v; want one claim of epoch 2", sts)
		}
		r.out = append(r.out, output{kind: "status", payload: mustJSON(t, sts[0])})
		r.claimBack()
		acts := drain[wire.Action](r, "action")
		if len(acts) != 1 || acts[0].MeasurementSeq != 1 || acts[0].Epoch != 2 || r.metrics[mHATakeovers] != 1 || r.metrics[mHAActive] != 1 {
			t.Fatalf("after the claim came back: actions %+v, take-overs %v; want measurement 1 answered under epoch 2", acts, r.metrics[mHATakeovers])
		}
	})
	t.Run("orphan too old: not answered", func(t *testing.T) {
		r := newHARig(t)
		r.claimOf(a, 1, false)
		r.measure(1, 0, false, solver{})
		r.advance(900 * time.Millisecond)
		r.claimOf(a, 1, true)
		r.claimBack()
		if acts := drain[wire.Action](r, "action"); len(acts) != 0 || len(r.solves) != 0 {
			t.Fatalf("actions %+v; want none, the orphan's solve-by has passed", acts)
		}
	})
	t.Run("hung active: claim after two periods unanswered, number on from its actions, continue its plan", func(t *testing.T) {
		r := newHARig(t)
		r.claimOf(a, 1, false)
		r.measure(1, 0, false, solver{})
		r.advance(100 * time.Millisecond)
		r.control(event{kind: evAction, action: &wire.Action{Seq: 500, MeasurementSeq: 1, Node: "a", Instance: "i-a", Epoch: 1,
			Plan: json.RawMessage(`{"steps":[1]}`)}})
		for seq := uint64(2); seq <= 3; seq++ { // a stops answering
			r.advance(900 * time.Millisecond)
			r.measure(seq, 0, false, solver{})
			r.advance(100 * time.Millisecond)
		}
		if sts := drain[wire.Status](r, "status"); len(sts) != 0 {
			t.Fatalf("claimed %+v after one period unanswered", sts)
		}
		r.advance(time.Second)
		r.take(r.c.Step(evTick{}, r.env()))
		sts := drain[wire.Status](r, "status")
		if len(sts) != 1 || sts[0].Epoch != 2 || !strings.Contains(sts[0].Reason, "unanswered") {
			t.Fatalf("after two periods: %+v; want one claim of epoch 2 naming the unanswered measurement", sts)
		}
		r.out = append(r.out, output{kind: "status", payload: mustJSON(t, sts[0])})
		r.claimBack()
		r.advance(100 * time.Millisecond)
		r.measure(4, 0, false, solver{took: 10 * time.Millisecond})
		acts := drain[wire.Action](r, "action")
		if len(acts) != 1 || acts[0].Seq != 500+takeoverSeqGap+1 || acts[0].Epoch != 2 {
			t.Fatalf("actions %+v; want measurement 4 under epoch 2 numbered past a's 500 by the gap", acts)
		}
		if o := r.solves[len(r.solves)-1]; o.adopt == nil || o.adopt.seq != 500 || o.adoptPeriods != 3 {
			t.Fatalf("solve order %+v; want it to continue a's plan of action 500, three periods on", o)
		}
	})
	t.Run("no active daemon seen: claim after two periods", func(t *testing.T) {
		r := newHARig(t)
		r.advance(1900 * time.Millisecond)
		r.take(r.c.Step(evTick{}, r.env()))
		if sts := drain[wire.Status](r, "status"); len(sts) != 0 {
			t.Fatalf("claimed %+v before two periods", sts)
		}
		r.advance(100 * time.Millisecond)
		r.caughtUp = false
		r.take(r.c.Step(evTick{}, r.env()))
		if sts := drain[wire.Status](r, "status"); len(sts) != 0 {
			t.Fatalf("claimed %+v while not caught up", sts)
		}
		r.caughtUp = true
		r.take(r.c.Step(evIdle{}, r.env()))
		if sts := drain[wire.Status](r, "status"); len(sts) != 1 || sts[0].Epoch != 1 {
			t.Fatalf("claims %+v; want one of epoch 1", sts)
		}
	})
}

// TestCoreHAPartitions: an active daemon cut off from the broker. Its new connection makes it a
// standby until its own claim comes back there; a measurement on the lost connection has its
// action withheld; and one that arrived meanwhile is answered when the claim comes back in the same
// term. Another daemon's higher claim ends its term, and a rejection after that sends no error
// message: the error topic is the new active daemon's.
func TestCoreHAPartitions(t *testing.T) {
	r := newHARig(t)
	r.claimOf(coreSelf, 1, false)
	r.measure(1, 0, false, solver{took: 10 * time.Millisecond})
	if acts := drain[wire.Action](r, "action"); len(acts) != 1 || acts[0].Epoch != 1 {
		t.Fatalf("actions %+v; want measurement 1 under epoch 1", acts)
	}

	// Measurement 2's connection is lost during its solve: withheld, counted.
	r.advance(time.Second)
	m := inbound{meas: stubMeas(2), env: wire.Envelope{Seq: 2, TSms: r.now.UnixMilli()}, received: r.now, conn: r.conn}
	rd := r.take(r.c.Step(evMeasure{m: m}, r.env()))
	rd = r.take(r.c.Step(evSlot{ok: rd.wait != nil}, r.env()))
	r.advance(10 * time.Millisecond)
	r.take(r.c.Step(evSolved{d: optimal(0.01), connAlive: false}, r.env()))
	if acts := drain[wire.Action](r, "action"); len(acts) != 0 || r.metrics[mHAWithheld] != 1 || r.records != 2 {
		t.Fatalf("actions %+v, withheld %v; want the action withheld and its record finished", acts, r.metrics[mHAWithheld])
	}

	// A new connection: standby on it until the claim is seen there again.
	r.advance(100 * time.Millisecond)
	r.conn = &mqttConn{gen: 2}
	r.control(event{kind: evConnected})
	r.measure(3, 0, false, solver{})
	if len(r.solves) != 1 || len(r.out) != 0 {
		t.Fatalf("%d solves, published %+v; want measurement 3 kept, nothing published", len(r.solves), r.out)
	}
	r.advance(100 * time.Millisecond)
	r.claimOf(coreSelf, 1, false) // the retained claim, handed back on subscribing
	for _, o := range r.out {
		if o.kind == "action" && o.conn != r.conn {
			t.Error("the retaken measurement's action is not on the connection in use")
		}
	}
	acts := drain[wire.Action](r, "action")
	if len(acts) != 1 || acts[0].MeasurementSeq != 3 || acts[0].Epoch != 1 || r.metrics[mHATakeovers] != 1 {
		t.Fatalf("actions %+v, take-overs %v; want 3 answered in the same term, no take-over after the first", acts, r.metrics[mHATakeovers])
	}
	drain[wire.Status](r, "status")

	// c's higher claim arrives while measurement 4 waits past its deadline: the miss is counted,
	// but the error topic is c's now.
	r.advance(time.Second)
	m = inbound{meas: stubMeas(4), env: wire.Envelope{Seq: 4, TSms: r.now.UnixMilli()}, received: r.now, conn: r.conn, n: 1}
	r.c.foresee(event{kind: evStatus, claim: claim{who: member{"c", "i-c"}, epoch: 2}, conn: r.conn, at: r.now})
	r.advance(2 * time.Second)
	rd = r.take(r.c.Step(evMeasure{m: m}, r.env()))
	var sent int
	for _, o := range rd.out {
		if o.rej != nil && r.c.errorFor(o.rej, r.now, &ready{}) != nil {
			sent++
		}
	}
	if r.metrics[mDeadlineMiss] != 1 || sent != 0 || !r.c.standbyAhead() {
		t.Fatalf("misses %v, error messages %d, standby ahead %v; want one miss, no message", r.metrics[mDeadlineMiss], sent, r.c.standbyAhead())
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// group is daemons of one HA group on one broker, each a core in a rig: what a core publishes on
// the status and action topics reaches every core, its own included, in one order (the broker's),
// as the session would hand it over. A daemon cut off sends and receives nothing.
type group struct {
	t    *testing.T
	rigs []*rig
	cut  []bool
	// answered counts the actions that reached the broker per measurement, whoever sent them.
	answered map[uint64]int
}

func newGroup(t *testing.T, members ...member) *group {
	g := &group{t: t, cut: make([]bool, len(members)), answered: map[uint64]int{}}
	for _, m := range members {
		r := newRig(t, corePlant(), newElection(m, time.Second, 2))
		r.control(event{kind: evConnected, conn: r.conn})
		r.control(event{kind: evSubscribed})
		g.rigs = append(g.rigs, r)
	}
	return g
}

func (g *group) advance(d time.Duration) {
	for _, r := range g.rigs {
		r.advance(d)
	}
}

// route moves what every connected daemon published to the broker and delivers it to every
// connected daemon, until nothing more is published. Error messages are dropped.
func (g *group) route() {
	for moved := true; moved; {
		moved = false
		for i, r := range g.rigs {
			out := r.out
			r.out = nil
			if g.cut[i] {
				continue
			}
			for _, o := range out {
				if o.kind == "error" {
					continue
				}
				moved = true
				var ev event
				switch o.kind {
				case "status":
					c, ok := parseClaim(o.payload)
					if !ok {
						g.t.Fatalf("status %s is no claim", o.payload)
					}
					ev = event{kind: evStatus, claim: c}
				case "action":
					a := new(wire.Action)
					if err := json.Unmarshal(o.payload, a); err != nil {
						g.t.Fatal(err)
					}
					g.answered[a.MeasurementSeq]++
					ev = event{kind: evAction, action: a}
				}
				for j, to := range g.rigs {
					if !g.cut[j] {
						to.control(ev)
					}
				}
			}
		}
	}
}

// measure has the plant publish measurement seq now; every connected daemon takes it at once.
func (g *group) measure(seq uint64) {
	for i, r := range g.rigs {
		if !g.cut[i] {
			r.measure(seq, 0, false, solver{took: 10 * time.Millisecond})
		}
	}
	g.route()
}

// tick is every connected daemon's timer.
func (g *group) tick() {
	for i, r := range g.rigs {
		if !g.cut[i] {
			r.take(r.c.Step(evTick{}, r.env()))
		}
	}
	g.route()
}

func (g *group) active() (n int, who int) {
	for i, r := range g.rigs {
		if r.c.ha.active() {
			n, who = n+1, i
		}
	}
	return n, who
}

// TestCoreHAGroup: daemons of a group through one broker order — a group starting from nothing,
// two daemons with the same node name, an active one that hangs in a solve, and one whose
// connection is lost mid-solve. At every point at most one is active, and no measurement is
// answered twice.
func TestCoreHAGroup(t *testing.T) {
	t.Run("same node name: one active, every measurement answered once", func(t *testing.T) {
		g := newGroup(t, member{"a", "i-1"}, member{"a", "i-2"})
		g.advance(2 * time.Second)
		g.tick() // both claim epoch 1; the broker's order settles it
		if n, who := g.active(); n != 1 || who != 0 {
			t.Fatalf("%d active (%d); want one, instance i-1", n, who)
		}
		for seq := uint64(1); seq <= 5; seq++ {
			g.advance(time.Second)
			g.measure(seq)
			g.tick()
		}
		for seq := uint64(1); seq <= 5; seq++ {
			if g.answered[seq] != 1 {
				t.Errorf("measurement %d answered %d times", seq, g.answered[seq])
			}
		}
		if g.rigs[0].metrics[mHAActive]+g.rigs[1].metrics[mHAActive] != 1 || g.rigs[0].metrics[mHAForeign]+g.rigs[1].metrics[mHAForeign] != 0 {
			t.Errorf("ha_active %v + %v, conflicts %v + %v; want 1 active, no conflict", g.rigs[0].metrics[mHAActive], g.rigs[1].metrics[mHAActive],
				g.rigs[0].metrics[mHAForeign], g.rigs[1].metrics[mHAForeign])
		}
	})

	t.Run("hung active: replaced, its late answer never goes out", func(t *testing.T) {
		g := newGroup(t, member{"a", "i-a"}, member{"b", "i-b"})
		g.advance(2 * time.Second)
		g.tick()
		g.measure(1)
		a, b := g.rigs[0], g.rigs[1]
		if n, who := g.active(); n != 1 || who != 0 || g.answered[1] != 1 {
			t.Fatalf("%d active (%d), measurement 1 answered %d times; want a active and answering", n, who, g.answered[1])
		}
		// a takes measurement 2 and hangs in its solve; b keeps it and the next ones.
		g.advance(time.Second)
		m2 := inbound{meas: stubMeas(2), env: wire.Envelope{Seq: 2, TSms: a.now.UnixMilli()}, received: a.now, conn: a.conn}
		rd := a.take(a.c.Step(evMeasure{m: m2}, a.env()))
		rd = a.take(a.c.Step(evSlot{ok: rd.wait != nil}, a.env()))
		if rd.solve == nil {
			t.Fatal("a did not start measurement 2's solve")
		}
		b.measure(2, 0, false, solver{})
		var claimed bool
		var later []event // what reaches a while it hangs, in order
		for seq := uint64(3); seq <= 4 && !claimed; seq++ {
			g.advance(time.Second)
			b.measure(seq, 0, false, solver{})
			b.take(b.c.Step(evTick{}, b.env()))
			for _, o := range b.out {
				if o.kind == "status" {
					claimed = true
					c, _ := parseClaim(o.payload)
					later = append(later, event{kind: evStatus, claim: c, conn: a.conn, at: a.now})
				}
			}
			g.cut[0] = true // a does not take anything now: it is stuck
			g.route()
			g.cut[0] = false
		}
		if !claimed || !b.c.ha.active() {
			t.Fatalf("b claimed %v, active %v; want b active after two periods unanswered", claimed, b.c.ha.active())
		}
		// a wakes up: the driver has taken b's claim out of its lane (ahead), and the late action
		// is withheld with no error message: the error topic is b's now.
		for _, ev := range later {
			a.c.foresee(ev)
		}
		rd = a.take(a.c.Step(evSolved{d: optimal(3), connAlive: true}, a.env()))
		for _, o := range rd.out {
			if o.kind == "action" {
				t.Fatal("a published its late action")
			}
			if o.rej != nil && a.c.errorFor(o.rej, a.now, &ready{}) != nil {
				t.Error("a sent an error message on b's error topic")
			}
		}
		a.out = nil
		for _, ev := range later {
			a.step(evControl{ev: ev, connAlive: true}, solver{}, false)
		}
		if a.c.ha.active() || a.metrics[mHAActive] != 0 {
			t.Error("a still active after b's claim")
		}
		g.advance(time.Second)
		g.measure(5)
		if g.answered[5] != 1 || g.answered[2] > 1 || a.metrics[mHAForeign]+b.metrics[mHAForeign] != 0 {
			t.Errorf("answers %v, conflicts %v + %v; want 5 answered once by b, nothing twice, no conflict", g.answered, a.metrics[mHAForeign], b.metrics[mHAForeign])
		}
	})

	t.Run("connection lost mid-solve: the standby answers in its place, the old action is withheld", func(t *testing.T) {
		g := newGroup(t, member{"a", "i-a"}, member{"b", "i-b"})
		g.advance(2 * time.Second)
		g.tick()
		a, b := g.rigs[0], g.rigs[1]
		g.advance(time.Second)
		m := inbound{meas: stubMeas(1), env: wire.Envelope{Seq: 1, TSms: a.now.UnixMilli()}, received: a.now, conn: a.conn}
		rd := a.take(a.c.Step(evMeasure{m: m}, a.env()))
		a.take(a.c.Step(evSlot{ok: rd.wait != nil}, a.env()))
		b.measure(1, 0, false, solver{})
		// a's network is cut: the broker sends its Last Will; b claims, its claim comes back, and
		// b answers measurement 1, which a left unanswered.
		g.cut[0] = true
		g.advance(100 * time.Millisecond)
		b.claimOf(a.c.ha.self, 1, true)
		g.route()
		if !b.c.ha.active() || g.answered[1] != 1 {
			t.Fatalf("b active %v, measurement 1 answered %d times; want b active, answering it", b.c.ha.active(), g.answered[1])
		}
		// a's solve ends on the lost connection: withheld.
		a.advance(200 * time.Millisecond)
		a.take(a.c.Step(evSolved{d: optimal(0.3), connAlive: false}, a.env()))
		if a.metrics[mHAWithheld] != 1 {
			t.Errorf("withheld %v, want 1", a.metrics[mHAWithheld])
		}
		a.out = nil
		// Reconnected, a sees b's retained claim and stays standby.
		a.conn = &mqttConn{gen: 2}
		g.cut[0] = false
		a.control(event{kind: evConnected})
		a.claimOf(b.c.ha.self, 2, false)
		g.advance(time.Second)
		g.measure(2)
		if n, who := g.active(); n != 1 || who != 1 || g.answered[1] != 1 || g.answered[2] != 1 {
			t.Errorf("%d active (%d), answers %v; want b alone, each measurement once", n, who, g.answered)
		}
	})
}
