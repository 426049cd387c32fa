package controller

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/configs"
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

// coreEvent is an event the core takes (the ev types below). The driver adds what only it can
// see (loopEnv).
type coreEvent interface{ coreEvent() }

func (evMeasure) coreEvent() {}
func (evSlot) coreEvent()    {}
func (evSolved) coreEvent()  {}
func (evControl) coreEvent() {}
func (evTick) coreEvent()    {}
func (evAlarm) coreEvent()   {}
func (evIdle) coreEvent()    {}
func (evPolicy) coreEvent()  {}

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
func (c *core) Step(ev coreEvent, env loopEnv) ready {
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
