package controller

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// The rules of one measurement's step, from its turn to its action (core.go): the step's budget
// (expiry.go), passing over a measurement a newer one supersedes, waiting for a core, cutting the
// solve short, and publishing or withholding the action with what it counts.

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
