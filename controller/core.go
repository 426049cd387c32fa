package controller

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// core holds one plant's control rules, in the manner of etcd's raft: it does no I/O — no MQTT,
// no files, no goroutines, no clock (the time comes in with each event) — and the plant loop
// (plant.go) is a driver that hands it events in arrival order and carries out what it returns.
// Every rule lives here, once: the step's deadline and budget (expiry.go), passing over a
// measurement that a newer one supersedes, cutting a solve short, withholding a late action, the
// HA election's consequences (epochs, claims, take-overs, answering an orphan, continuing the
// previous daemon's plan), the status and its alarm, and what each outcome counts.
//
// A measurement goes through three events: evMeasure (judged for its turn: passed over, too
// late, kept as a standby, or given a core to wait for), evSlot (a core was free in time or not:
// the solve starts with its budget), evSolved (the solve's decision: the action is published or
// withheld). At most one solve is in hand; measurements whose turn came while one was (a take-over
// answering an orphan ahead of the measurement that revealed the new role) wait in todo.
type core struct {
	cfg    configs.Plant
	plants []string
	// ha is the plant's election (nil without HA: the daemon is always active), folded in the
	// order events reach their turn; ahead is the same fold over every control event the driver
	// has taken out of its lane (foresee), the latest point of the broker's order known, which
	// decides whether an error message is still this daemon's to send.
	ha, ahead *election
	// safeAction is the family's safe action, for an action whose apply or plan does not encode.
	safeAction func() json.RawMessage

	actionSeq     uint64
	policyVersion string
	agent         bool   // a policy is loaded (the action carries "agent")
	state         string // the retained status's state
	alarm         string // the retained status's alarm ("" none)
	// relaxedAlarm names the shortfall while the last step's action was relaxed; part of alarm.
	relaxedAlarm string

	// HA: the role last acted on; the epoch of the term last acted in as active (0: none); the
	// other daemon's last action to continue from at the first step after taking over; when this
	// daemon last published an action; the newest measurement accepted as a standby.
	wasActive     bool
	activeEpoch   uint64
	adoptFrom     *peerAction
	lastPublished time.Time
	lastStandby   standbyMsg

	// recentSolves are the solve times of the last steps (a ring), for judging whether a
	// measurement and a newer one waiting behind it both fit (passOver) and when to cut a solve.
	recentSolves [8]time.Duration
	solvesSeen   int

	// todo are measurements whose turn came, to start one at a time; waiting is the one waiting
	// for a core (evSlot), solving the one whose solve is in hand (evSolved).
	todo    []inbound
	waiting *pendingStep
	solving *pendingStep
}

// pendingStep is a measurement between its turn and its action.
type pendingStep struct {
	m        inbound
	deadline stepDeadline
	since    time.Time // when it began waiting for a core, or its solve started
}

type standbyMsg struct {
	meas     mpc.Measurement
	env      wire.Envelope
	received time.Time
}

func newCore(cfg configs.Plant, plants []string, ha *election, safeAction func() json.RawMessage, p LoadedPolicy) *core {
	c := &core{cfg: cfg, plants: plants, ha: ha, safeAction: safeAction, state: wire.StateOnline,
		policyVersion: p.Version, agent: p.Policy != nil}
	if ha != nil {
		c.ahead = newElection(ha.self, ha.period, ha.takeover)
	}
	return c
}

// The events the core takes. The driver adds what only it can see (loopEnv).
type (
	// evMeasure: a valid measurement's turn came. newerWaiting: a newer valid one already waits
	// in the lane, with no control event between them.
	evMeasure struct {
		m            inbound
		newerWaiting bool
	}
	// evSlot: the wait for a core (ready.wait) ended, with one (ok) or past its time.
	evSlot struct{ ok bool }
	// evSolved: the solve (ready.solve) ended. cut: the driver's Interrupt ended it (cutRule);
	// stopping: the daemon is stopping; connAlive: the measurement's connection is still the one
	// in use; dlAlarm: the decision log's health (decisionAlarm.check).
	evSolved struct {
		d                        *mpc.Decision
		err                      error
		cut, stopping, connAlive bool
		dlAlarm                  string
	}
	// evControl: a control event's turn came (events.go). connAlive: its connection is still the
	// one in use.
	evControl struct {
		ev        event
		connAlive bool
	}
	// evTick: the loop's timer; dlAlarm as in evSolved.
	evTick struct{ dlAlarm string }
	// evAlarm: the decision log's health may have changed (records were just written).
	evAlarm struct{ dlAlarm string }
	// evIdle: the loop caught up with everything handed over (a claim may be due).
	evIdle struct{}
	// evPolicy: a new policy was loaded and set on the controller.
	evPolicy struct{ p LoadedPolicy }
)

// loopEnv is what the driver knows at each event: the time, whether it has taken everything
// handed over so far (a standby claims only then), and the connection in use.
type loopEnv struct {
	now      time.Time
	caughtUp bool
	current  *mqttConn
}

// ready is what the driver must do after an event, in order: publish (and judge rejections as
// they come, see errorFor), count, log; finish the decision record; look at the decision log's
// health again (evAlarm); tell the watchdog; then wait for a core or run a solve.
type ready struct {
	out     []output
	metrics []metricOp
	notes   []note
	// finish: the step's decision record ends with this decision. observe: a published step, for
	// the step metrics. recheck: the records just written may have been dropped.
	finish, observe *mpc.Decision
	recheck         bool
	kick            bool
	// passedOver: the measurement of evMeasure was passed over for a newer one (the driver takes
	// the next at once).
	passedOver bool
	// wait: wait for a free core until by, then evSlot. solve: run the solve, then evSolved.
	wait  *slotWait
	solve *solveOrder
}

// output is one payload to publish (on conn, or the connection in use when nil), or a rejection
// to count and, when the error topic is still this daemon's, answer (rej).
type output struct {
	kind     string // topic kind: action, status, error
	qos      byte
	retained bool
	payload  []byte
	conn     *mqttConn
	rej      *wire.Rejection
}

type slotWait struct{ by time.Time }

// solveOrder starts a solve: the measurement, its action's number, when the solve must end
// (solveBy) and when to cut it short (cut); adopt, when set, is the previous active daemon's plan
// to continue from, shifted by adoptPeriods periods.
type solveOrder struct {
	m            inbound
	actionSeq    uint64
	solveBy      time.Time
	cut          cutRule
	adopt        *peerAction
	adoptPeriods int
}

// cutRule decides when a solve in hand ends early: once the daemon is stopping, or once a newer
// valid measurement waits and the time left to this measurement's own end (a lower bound of the
// newer one's) is no more than what the newer one is likely to need — the slowest recent solve
// (est), or this solve's own time so far when that is longer (no history yet, or a harder
// instance than usual). The solver's Interrupt asks it, maybe from the engine's goroutines; it is
// a value, so it needs no lock.
type cutRule struct {
	start, end time.Time
	est        time.Duration
}

func (r cutRule) cut(now time.Time, newerWaiting, stopping bool) bool {
	if stopping {
		return true
	}
	if !newerWaiting {
		return false
	}
	return r.end.Sub(now) <= max(r.est, now.Sub(r.start))
}

// metricOp is one change of a plant's metric: an increment (counters, label optional), an
// observation (histograms) or a value (gauges).
type metricOp struct {
	kind  metricKind
	label string
	v     float64
}

type metricKind uint8

const (
	mDeadlineMiss metricKind = iota + 1
	mRejected                // label: reason
	mCutShort
	mSolveSeconds // observe
	mOverheadSeconds
	mActions // label: status
	mProposals
	mFeasible
	mAccepted
	mBenched
	mRelaxed
	mFallbacks // label: shifted | safe
	mHAWithheld
	mHATakeovers
	mHAForeign
	mHAActive // set
	mAlarm    // set
)

// note is one line for the journal.
type note struct {
	level  zapcore.Level
	msg    string
	fields []zap.Field
}

func (r *ready) count(k metricKind, label string, v float64) {
	r.metrics = append(r.metrics, metricOp{k, label, v})
}

func (r *ready) log(level zapcore.Level, msg string, fields ...zap.Field) {
	r.notes = append(r.notes, note{level, msg, fields})
}

func (r *ready) reject(rej *wire.Rejection) { r.out = append(r.out, output{kind: "error", rej: rej}) }

// Step takes one event at env.now and returns what the driver must do.
func (c *core) Step(ev any, env loopEnv) ready {
	var r ready
	switch e := ev.(type) {
	case evMeasure:
		c.measure(e, env, &r)
	case evSlot:
		c.slot(e.ok, env, &r)
	case evSolved:
		c.solved(e, env, &r)
	case evControl:
		c.control(e, env, &r)
	case evTick:
		c.haCheck(env, &r)
		if c.updateAlarm(e.dlAlarm, &r) {
			c.publishStatus(c.state, "alarm changed", env.now, &r)
		}
	case evAlarm:
		if c.updateAlarm(e.dlAlarm, &r) {
			c.publishStatus(c.state, "alarm changed", env.now, &r)
		}
	case evIdle:
		c.haCheck(env, &r)
	case evPolicy:
		old := c.policyVersion
		c.policyVersion, c.agent = e.p.Version, e.p.Policy != nil
		r.log(zapcore.InfoLevel, "policy swapped", zap.String("from", old), zap.String("to", e.p.Version))
		c.publishStatus(c.state, "policy "+e.p.Version, env.now, &r)
	default:
		panic("controller: core got an unknown event")
	}
	c.advance(env, &r)
	return r
}

// busy reports whether a measurement is between its turn and its action.
func (c *core) busy() bool { return c.waiting != nil || c.solving != nil }

// active reports whether this daemon answers the plant's measurements now.
func (c *core) active() bool { return c.ha == nil || c.ha.active() }

// standbyAhead reports whether, at the latest point of the broker's order known, this HA daemon is
// not the plant's active one.
func (c *core) standbyAhead() bool { return c.ahead != nil && !c.ahead.active() }

// foresee folds a control event the driver has taken out of its lane, ahead of its turn.
func (c *core) foresee(ev event) {
	if c.ahead == nil {
		return
	}
	switch ev.kind {
	case evConnected:
		c.ahead.connected(ev.conn.gen, ev.at)
	case evStatus:
		c.ahead.observe(ev.claim, ev.conn.gen, ev.at)
	}
}

// measure takes a measurement at its turn: passed over for a newer one, kept as a standby, or
// started (advance).
func (c *core) measure(e evMeasure, env loopEnv, r *ready) {
	m := e.m
	if e.newerWaiting && c.active() && c.passOver(&m, env.now, r) {
		r.passedOver = true
		return
	}
	// Tagged with the election as it stood when it arrived: every earlier control event is
	// folded by now, no later one yet.
	if c.ha != nil {
		if !c.ha.active() {
			c.ha.accepted(m.env.Seq, m.received)
			m.standby = true
		} else {
			m.epoch = c.ha.epoch
		}
	}
	if m.standby {
		// Kept to answer it if this daemon takes over from one that went offline without
		// answering it (ha.go); it answers nothing now.
		c.lastStandby = standbyMsg{meas: m.meas, env: m.env, received: m.received}
		c.haCheck(env, r)
		r.kick = true
		return
	}
	if c.ha != nil && !c.wasActive {
		c.haCheck(env, r) // the role changed before its wake-up reached the loop
	}
	c.todo = append(c.todo, m)
}

// passOver decides for a measurement taken while a newer valid one already waits behind it. Each
// deadline runs from its measurement's receipt, so answering the older one first spends the newer
// one's time, and a plant applies only an action that answers its latest measurement
// (specs/interfaces.md). The older one is still answered when the recent solves say both fit: its
// solve then ends early enough to leave the newer one the time of the slowest recent solve.
// Otherwise it is passed over with an error message (reason "superseded"), so that the newest is
// solved in its time rather than reaching its deadline behind the older ones.
func (c *core) passOver(m *inbound, now time.Time, r *ready) bool {
	est := c.solveEstimate()
	// The newer one arrived later, so its deadline is no earlier than this one's.
	end := deadlineOf(&c.cfg, m.received, m.env.TSms).solveBy()
	if est == 0 || !now.Add(2*est).After(end) {
		if est > 0 {
			m.solveBy = end.Add(-est)
		}
		return false
	}
	r.reject(wire.Reject(wire.ReasonSuperseded, &m.env.Seq, "measurement %d passed over: a newer one arrived before its solve started, and recent solves (up to %v) leave no time to answer both",
		m.env.Seq, est.Round(time.Millisecond)))
	return true
}

// advance starts the next measurement whose turn came, when none is in hand: too late to solve,
// it is rejected; otherwise it waits for a free core until its solve must end.
func (c *core) advance(env loopEnv, r *ready) {
	for !c.busy() && len(c.todo) > 0 {
		m := c.todo[0]
		c.todo = c.todo[1:]
		deadline := deadlineOf(&c.cfg, m.received, m.env.TSms)
		if !env.now.Before(deadline.solveBy()) {
			// It waited behind a solve until no solve could finish in time; an action now would
			// come after the deadline.
			r.count(mDeadlineMiss, "", 1)
			r.reject(wire.Reject(wire.ReasonDeadline, &m.env.Seq, "measurement %d waited %v behind earlier steps: past %s before its solve could start",
				m.env.Seq, env.now.Sub(m.received).Round(time.Millisecond), deadline.what()))
			continue
		}
		c.waiting = &pendingStep{m: m, deadline: deadline, since: env.now}
		r.wait = &slotWait{by: deadline.solveBy()}
	}
}

// slot starts the solve of the measurement that waited for a core, or rejects it when none came
// in time.
func (c *core) slot(ok bool, env loopEnv, r *ready) {
	p := c.waiting
	c.waiting = nil
	if p == nil {
		return
	}
	m, now := p.m, env.now
	if !ok {
		r.count(mDeadlineMiss, "", 1)
		r.reject(wire.Reject(wire.ReasonDeadline, &m.env.Seq, "measurement %d waited %v for a free core (other plants' solves): past %s before its solve could start",
			m.env.Seq, now.Sub(p.since).Round(time.Millisecond), p.deadline.what()))
		return
	}
	o := &solveOrder{m: m}
	if a := c.adoptFrom; a != nil {
		// The action answered a measurement about one period before the next was due; the
		// controller shifts once per step, so the plan is shifted for every further period.
		c.adoptFrom = nil
		o.adopt = a
		o.adoptPeriods = int(m.received.Sub(a.received).Round(c.cfg.Period) / c.cfg.Period)
	}
	c.actionSeq++
	o.actionSeq = c.actionSeq
	// The solver aims short of the deadline: it checks the time between NLPs and cannot stop one
	// midway, and the action still has to be encoded and published. A newer measurement waiting
	// behind this one may end it earlier (passOver), and one arriving during the solve may cut it
	// short (cutRule): its deadline is no earlier than this measurement's own end, not the
	// shortened solveBy, whose shortening already left the newer one its time.
	end := p.deadline.solveBy()
	o.solveBy = end
	if !m.solveBy.IsZero() && m.solveBy.Before(end) {
		o.solveBy = m.solveBy
	}
	o.cut = cutRule{start: now, end: end, est: c.solveEstimate()}
	p.since = now
	c.solving = p
	r.solve = o
}

// solved turns the solve's decision into the action and publishes it, or withholds it, and
// updates the status.
func (c *core) solved(e evSolved, env loopEnv, r *ready) {
	p := c.solving
	c.solving = nil
	if p == nil {
		return
	}
	m, now, d := p.m, env.now, e.d
	seq := m.env.Seq
	solve := now.Sub(p.since)
	r.count(mSolveSeconds, "", solve.Seconds())
	if e.err != nil {
		c.actionSeq-- // no action went out under this number
		r.reject(wire.Reject(wire.ReasonStep, &seq, "step: %v", e.err))
		return
	}
	if e.cut {
		r.count(mCutShort, "", 1)
		why := "a newer measurement was waiting"
		if e.stopping {
			why = "the daemon is stopping"
		}
		d.Reason = joinMsg(d.Reason, "solve cut short: "+why)
		c.noteSolve(solve) // what it would have needed is at least this
	} else {
		c.noteSolve(time.Duration(d.SolveSeconds * float64(time.Second)))
	}
	a := newAction(c.cfg.ID, c.actionSeq, seq, now, m.env.TSms, c.cfg.Period, c.cfg.Deadline, d, c.policyVersion, c.agent)
	if c.ha != nil {
		a.Node, a.Instance, a.Epoch = c.ha.self.node, c.ha.self.instance, m.epoch
	}
	payload, err := json.Marshal(a)
	if err != nil {
		// Only a family producing invalid JSON for apply or plan can get here: publish the safe
		// action rather than nothing.
		r.log(zapcore.ErrorLevel, "action does not encode; publishing the safe action", zap.Error(err))
		a.Apply, a.Plan, a.Status, a.Safe = c.safeAction(), json.RawMessage("null"), mpc.StatusFallback, true
		a.Reason = joinMsg(a.Reason, "action encoding failed: "+err.Error())
		if payload, err = json.Marshal(a); err != nil {
			r.reject(wire.Reject(wire.ReasonStep, &seq, "action does not encode: %v", err))
			return
		}
	}
	if c.withhold(p, e.connAlive, now, r) {
		r.finish = d
		return
	}
	o := output{kind: "action", qos: 1, payload: payload}
	if c.ha != nil {
		o.conn = m.conn // with HA, on the connection it came on or not at all
	}
	r.out = append(r.out, o)
	c.lastPublished = now
	if c.ha != nil {
		c.ha.answered(seq, m.epoch)
	}

	r.count(mOverheadSeconds, "", max(0, now.Sub(m.received)-solve).Seconds())
	r.count(mActions, a.Status, 1)
	r.observe = d
	if c.agent {
		r.count(mProposals, "", float64(d.Agent.Proposed))
		r.count(mFeasible, "", float64(d.Agent.Feasible))
		r.count(mAccepted, "", float64(d.Agent.Accepted))
		r.count(mBenched, "", float64(d.Agent.Benched))
	}
	state := wire.StateOnline
	c.relaxedAlarm = ""
	if x := d.Relaxed; x != nil {
		// The plant cannot be held within its limits: the action is the soft optimum, and the
		// status says so until a forecast is servable again.
		state = wire.StateDegraded
		c.relaxedAlarm = "hard limits cannot be held: " + x.Shortfall
		r.count(mRelaxed, "", 1)
		r.log(zapcore.WarnLevel, "relaxed", zap.Uint64("seq", seq), zap.String("limit", x.Limit),
			zap.Float64("max_violation", x.MaxViolation), zap.Int("first_step", x.FirstStep),
			zap.Float64("unserved", x.Unserved), zap.String("proof", x.Proof))
	}
	if d.Status == mpc.StatusFallback {
		state = wire.StateDegraded
		kind := "shifted"
		if d.Safe {
			kind = "safe"
		}
		r.count(mFallbacks, kind, 1)
		r.log(zapcore.WarnLevel, "fallback", zap.Uint64("seq", seq), zap.String("reason", d.Reason), zap.Bool("safe", d.Safe))
	} else if res := d.Result; res != nil && res.Status == gbd.StatusFailed {
		// A solver failed after the solve had an incumbent (a CBC worker crashed, say): the action
		// is that incumbent, marked gap; the journal says what failed.
		r.log(zapcore.WarnLevel, "solver failed; the action is the incumbent", zap.Uint64("seq", seq), zap.String("reason", d.Reason))
	}
	if alarmChanged := c.updateAlarm(e.dlAlarm, r); alarmChanged || state != c.state {
		c.publishStatus(state, d.Reason, now, r)
	}
	r.finish, r.recheck, r.kick = d, true, true
	r.log(zapcore.DebugLevel, "action", zap.Uint64("seq", a.Seq), zap.Uint64("measurement_seq", seq), zap.String("status", a.Status),
		zap.Duration("solve", solve), zap.Int("iterations", d.Iterations))
}

// withhold decides, just before publishing, that an action must not go out, and accounts for it:
// an HA daemon whose measurement's connection is gone (the broker has sent, or will send, its Last
// Will, and a standby may answer in its place), or any daemon past the measurement's effective
// deadline or the action's expiry (a solve that overran, a process that was stopped; expiry.go). A
// late action is never published: the plant keeps its last valid one, which is what it does when
// no action comes at all.
func (c *core) withhold(p *pendingStep, connAlive bool, now time.Time, r *ready) bool {
	seq, deadline := p.m.env.Seq, p.deadline
	switch {
	case c.ha != nil && !connAlive:
		r.count(mHAWithheld, "", 1)
		r.log(zapcore.WarnLevel, "ha: the connection the measurement came on is gone; action withheld", zap.Uint64("measurement_seq", seq))
	case deadline.late(now):
		r.count(mDeadlineMiss, "", 1)
		r.log(zapcore.WarnLevel, "step ended after the deadline; action withheld", zap.Uint64("seq", seq), zap.Duration("late", now.Sub(deadline.at)),
			zap.Bool("by_expiry", deadline.byExpiry))
		r.reject(wire.Reject(wire.ReasonDeadline, &seq, "step for measurement %d ended %v after %s: action withheld",
			seq, now.Sub(deadline.at).Round(time.Millisecond), deadline.what()))
	default:
		return false
	}
	return true
}

// noteSolve keeps a step's solve time (for a cut-short one, the time until the cut: a lower
// bound), for solveEstimate.
func (c *core) noteSolve(d time.Duration) {
	c.recentSolves[c.solvesSeen%len(c.recentSolves)] = d
	c.solvesSeen++
}

// solveEstimate is the slowest of the recent solves (0 before the first).
func (c *core) solveEstimate() time.Duration {
	var m time.Duration
	for _, d := range c.recentSolves {
		m = max(m, d)
	}
	return m
}

// errorFor is the error message of a rejection the driver has counted, at now, after taking every
// control event that arrived meanwhile (foresee): nil when the error topic is no longer this
// daemon's, an HA daemon that lost the plant meanwhile.
func (c *core) errorFor(rej *wire.Rejection, now time.Time, r *ready) []byte {
	if c.standbyAhead() {
		r.log(zapcore.InfoLevel, "measurement not answered (standby now)", zap.String("reason", rej.Reason), zap.String("error", rej.Msg))
		return nil
	}
	r.log(zapcore.WarnLevel, "measurement rejected", zap.String("reason", rej.Reason), zap.String("error", rej.Msg))
	b, _ := json.Marshal(wire.ErrorOf(rej, c.cfg.ID, now.UnixMilli(), 0))
	return b
}

// control folds one control event at its turn.
func (c *core) control(e evControl, env loopEnv, r *ready) {
	ev := e.ev
	switch ev.kind {
	case evConnected:
		if c.ha != nil {
			// Until its own claim comes back on this connection, this daemon is not active on it
			// (ha.go, "Connections").
			c.ha.connected(ev.conn.gen, ev.at)
			c.haCheck(env, r)
		}
	case evSubscribed:
		if c.ha != nil {
			c.ha.started(ev.at)
			c.haCheck(env, r)
		}
	case evStatus:
		// The plant's own status topic is watched because a broker may deliver the Last Will of a
		// connection it has only just noticed is dead after this daemon reconnected and published
		// online; seeing "offline" while connected (or, with HA, another node's claim while
		// active), the daemon republishes its real state, so the retained status heals itself.
		cl := ev.claim
		heal, changed := cl.offline, false
		if c.ha != nil {
			was, is := c.ha.observe(cl, ev.conn.gen, ev.at)
			heal, changed = c.ha.heal(cl), was != is || cl.offline
		}
		if heal && e.connAlive {
			r.log(zapcore.InfoLevel, "retained status is not this daemon's; republishing", zap.Stringer("seen", cl.who), zap.Bool("seen_offline", cl.offline))
			c.publishStatus(c.state, "replacing a stale status", env.now, r)
		}
		if changed {
			c.haCheck(env, r) // after the repair, as the fold's outcome may claim or answer an orphan
		}
	case evAction:
		if c.ha != nil && c.ha.observeAction(ev.action, ev.at) {
			a := ev.action
			r.count(mHAForeign, "", 1)
			r.log(zapcore.ErrorLevel, "another daemon answered a measurement while this one is active", zap.String("node", a.Node),
				zap.Uint64("measurement_seq", a.MeasurementSeq), zap.Uint64("epoch", a.Epoch))
		}
	}
}

// haCheck acts on the election: it notices a change of role, and lets a standby claim the plant
// when the active daemon is gone or not answering (ha.go). A claim waits until the driver has taken
// everything that arrived: a loop catching up after a long step must not judge a measurement
// unanswered by the clock of now when the answer is still behind it in the lanes.
func (c *core) haCheck(env loopEnv, r *ready) {
	if c.ha == nil {
		return
	}
	is := c.ha.active()
	if is != c.wasActive {
		c.roleChanged(is, env, r)
	}
	if is || !env.caughtUp {
		return
	}
	reason, epoch := c.ha.shouldClaim(env.now)
	if reason == "" {
		return
	}
	r.log(zapcore.WarnLevel, "ha: claiming the plant", zap.String("reason", reason), zap.Uint64("epoch", epoch))
	r.out = append(r.out, output{kind: "status", qos: 1, retained: true, payload: c.statusPayload(c.state, "takeover: "+reason, epoch, env.now)})
}

func (c *core) roleChanged(active bool, env loopEnv, r *ready) {
	c.wasActive = active
	leader, _ := c.ha.leaderNode()
	if !active {
		r.count(mHAActive, "", 0)
		c.adoptFrom = nil
		if leader == c.ha.self {
			r.log(zapcore.InfoLevel, "ha: not active on this connection until the broker hands back this daemon's claim")
		} else {
			r.log(zapcore.WarnLevel, "ha: standby", zap.Stringer("active", leader))
		}
		return
	}
	r.count(mHAActive, "", 1)
	epoch := c.ha.epoch
	last := c.lastStandby
	if epoch == c.activeEpoch {
		// The same term on a new connection: the claim came back, nothing was taken over. A
		// measurement that arrived before it did was tagged standby but is nobody else's (the
		// others still count this daemon as active): answer the newest if there is still time.
		c.ha.takeOver()
		r.log(zapcore.InfoLevel, "ha: active again on the new connection", zap.Uint64("epoch", epoch))
		c.lastStandby = standbyMsg{}
		if last.meas != nil && env.now.Before(deadlineOf(&c.cfg, last.received, last.env.TSms).solveBy()) {
			c.retake(last, epoch, env)
		}
		return
	}
	c.activeEpoch = epoch
	r.count(mHATakeovers, "", 1)
	p, orphan := c.ha.takeOver()
	fields := []zap.Field{zap.Uint64("epoch", epoch)}
	if p != nil && c.lastPublished.Before(p.received) {
		// The other daemon acted after this one last did: number on from its actions, and
		// continue from its plan at the first step.
		c.actionSeq = max(c.actionSeq, p.seq+takeoverSeqGap)
		c.adoptFrom = p
		fields = append(fields, zap.Stringer("from", p.who), zap.Uint64("last_action_seq", p.seq), zap.Uint64("last_measurement_seq", p.measurementSeq))
	}
	r.log(zapcore.WarnLevel, "ha: active", fields...)
	c.lastStandby = standbyMsg{}
	if orphan != 0 && last.meas != nil && last.env.Seq == orphan && env.now.Before(deadlineOf(&c.cfg, last.received, last.env.TSms).solveBy()) {
		r.log(zapcore.InfoLevel, "ha: answering the measurement the previous active daemon left unanswered", zap.Uint64("seq", orphan))
		c.retake(last, epoch, env)
	}
}

// retake answers a measurement accepted as a standby, after taking over: it goes ahead of
// anything else whose turn came.
func (c *core) retake(s standbyMsg, epoch uint64, env loopEnv) {
	m := inbound{meas: s.meas, env: s.env, received: s.received, retake: true, epoch: epoch, conn: env.current}
	c.todo = append([]inbound{m}, c.todo...)
}

// updateAlarm recomputes the status alarm (a relaxed step's shortfall, then the decision log's
// health) and reports whether it changed.
func (c *core) updateAlarm(dl string, r *ready) bool {
	a := c.relaxedAlarm
	if dl != "" {
		a = joinMsg(a, dl)
	}
	if a == c.alarm {
		return false
	}
	c.alarm = a
	if a != "" {
		r.count(mAlarm, "", 1)
		r.log(zapcore.WarnLevel, "alarm raised", zap.String("alarm", a))
	} else {
		r.count(mAlarm, "", 0)
		r.log(zapcore.InfoLevel, "alarm cleared")
	}
	return true
}

// publishStatus makes state the retained status's and publishes it, when this daemon is the
// plant's active one (the retained status is the active daemon's).
func (c *core) publishStatus(state, reason string, now time.Time, r *ready) {
	c.state = state
	if !c.active() {
		return
	}
	var epoch uint64
	if c.ha != nil {
		epoch = c.ha.epoch
	}
	r.out = append(r.out, output{kind: "status", qos: 1, retained: true, payload: c.statusPayload(state, reason, epoch, now)})
	r.log(zapcore.InfoLevel, "status", zap.String("state", state), zap.String("reason", reason))
}

// statusPayload is the retained status for state under epoch.
func (c *core) statusPayload(state, reason string, epoch uint64, now time.Time) []byte {
	var self *member
	if c.ha != nil {
		self = &c.ha.self
	}
	return statusMsg(c.cfg.ID, c.plants, self, c.view(), state, reason, epoch, now)
}

// view is what the driver shows other goroutines of the core's state.
func (c *core) view() *plantView {
	return &plantView{state: c.state, alarm: c.alarm, policyVersion: c.policyVersion, standby: c.standbyAhead()}
}

// plantView is what the loop shows other goroutines of its state; it is replaced, never changed.
type plantView struct {
	state, alarm, policyVersion string
	// standby: an HA daemon that is not the plant's active one (ha.go) at the latest point of the
	// broker's order the loop knows (the fold ahead).
	standby bool
}

// statusMsg encodes the retained status of plant for state; self is the HA member (nil without
// HA), v the policy version and alarm shown.
func statusMsg(plant string, plants []string, self *member, v *plantView, state, reason string, epoch uint64, now time.Time) []byte {
	st := wire.Status{V: wire.Version, State: state, TSms: now.UnixMilli(), Plant: plant,
		Plants: plants, PolicyVersion: v.policyVersion, Reason: reason, Alarm: v.alarm}
	if self != nil {
		st.Node, st.Instance, st.Epoch = self.node, self.instance, epoch
	}
	b, _ := json.Marshal(st)
	return b
}
