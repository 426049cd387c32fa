package controller

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"gbdmpc/wire"
)

// The consequences of the HA election for one plant (ha.go folds the election itself): whose
// error topic it is, control events at their turn, claims, take-overs, answering an orphan, and
// continuing the previous active daemon's numbering and plan.

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
