package controller

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// Stepper is what a plant loop needs of the receding-horizon controller; *mpc.Controller is the one
// the daemon uses. Both methods are called from the loop's goroutine only, so SetPolicy can never
// land in the middle of a Step.
type Stepper interface {
	Step(m mpc.Measurement, deadline time.Time) (mpc.Decision, error)
	SetPolicy(p gbd.Policy)
}

// Clock is the daemon's source of time for everything that decides (ages, deadlines, timestamps).
type Clock interface{ Now() time.Time }

// plantLoop is one plant's actor. Its goroutine owns the plant's state (sequence numbers, status,
// controller, policy); everything else reaches it through the mailbox and the updates channel, in
// the manner of etcd's raft node: the MQTT callback and the reload path never touch the state.
type plantLoop struct {
	cfg    configs.Plant
	topic  func(kind string) string
	family mpc.Family
	ctl    Stepper
	rec    *decisionRecorder // nil without a decision log
	mbox   *mailbox
	sess   *session
	clock  Clock
	log    *zap.Logger
	m      *metrics
	plants []string
	// beatEvery is how often an idle loop proves it is alive (see watchdog.go).
	beatEvery time.Duration
	kick      func() // tells the watchdog a cycle completed

	updates chan LoadedPolicy
	// restatus asks the loop to republish its retained status (the session saw a stale offline).
	restatus chan struct{}
	// ha is the plant's active/standby election (nil without HA, when the daemon is always
	// active); haWake tells the loop it changed.
	ha     *election
	haWake chan struct{}

	// owned by the loop goroutine
	actionSeq uint64
	policy    LoadedPolicy
	pending   []pendingPublish
	// HA: the role the loop last acted on, and the other daemon's last action to continue from
	// at the first step after taking over.
	wasActive bool
	// activeEpoch is the epoch of the term the loop last acted in as active (0: none).
	activeEpoch uint64
	adoptFrom   *peerAction
	// lastPublished is when this loop last published an action (zero: never).
	lastPublished time.Time
	// lastStandby is the newest measurement accepted as a standby, to answer on taking over from
	// a daemon that went offline without answering it.
	lastStandby standbyMsg

	// decisions follows the decision log's health for the status alarm (nil: no log).
	decisions *decisionAlarm
	// relaxedAlarm names the shortfall while the last step's action was relaxed ("" otherwise); it
	// is part of the status alarm.
	relaxedAlarm string

	// read by the session's connect handler and by readiness
	state         atomic.Value // string
	alarm         atomic.Value // string: the status's alarm, "" none
	policyVersion atomic.Value // string
	lastAccepted  atomic.Int64 // receipt time (Unix ns) of the last accepted measurement; 0: none
	subscribedAt  atomic.Int64 // first subscription (Unix ns), for readiness before any measurement
	heartbeat     atomic.Int64 // last time the loop went round (Unix ns)
}

type standbyMsg struct {
	meas     mpc.Measurement
	env      envelope
	received time.Time
}

type pendingPublish struct {
	kind string
	tok  mqtt.Token
}

func (l *plantLoop) init(p LoadedPolicy) {
	l.policy = p
	l.ctl.SetPolicy(p.Policy)
	l.state.Store(wire.StateOnline)
	l.policyVersion.Store(p.Version)
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.updates = make(chan LoadedPolicy, 1)
	l.restatus = make(chan struct{}, 1)
	l.haWake = make(chan struct{}, 1)
	l.heartbeat.Store(l.clock.Now().UnixNano())
	if l.ha == nil {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(1)
	} else {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(0)
	}
}

// active reports whether this daemon answers the plant's measurements now.
func (l *plantLoop) active() bool { return l.ha == nil || l.ha.active() }

// statusPayload is the retained status for state (reason optional).
func (l *plantLoop) statusPayload(state, reason string) []byte {
	var epoch uint64
	if l.ha != nil {
		epoch = l.ha.epochNow()
	}
	return l.statusWithEpoch(state, reason, epoch)
}

func (l *plantLoop) statusWithEpoch(state, reason string, epoch uint64) []byte {
	alarm, _ := l.alarm.Load().(string)
	st := wire.Status{V: 1, State: state, TSms: l.clock.Now().UnixMilli(), Plant: l.cfg.ID,
		Plants: l.plants, PolicyVersion: l.policyVersion.Load().(string), Reason: reason, Alarm: alarm}
	if l.ha != nil {
		st.Node, st.Instance, st.Epoch = l.ha.self.node, l.ha.self.instance, epoch
	}
	b, _ := json.Marshal(st)
	return b
}

// run serves the plant until ctx ends, then publishes offline and closes the session.
func (l *plantLoop) run(ctx context.Context) error {
	l.sess.start()
	defer func() {
		var offline []byte
		if l.active() { // a standby leaves the active daemon's status alone
			offline = l.statusPayload(wire.StateOffline, "daemon stopped")
		}
		l.sess.stop(offline, 2*time.Second)
	}()
	tick := time.NewTicker(l.beatEvery)
	defer tick.Stop()
	for {
		l.heartbeat.Store(l.clock.Now().UnixNano())
		select {
		case <-ctx.Done():
			return nil
		case <-l.mbox.Ready():
			// One message per turn, so a policy update is never starved by a backlog.
			if msg, ok := l.mbox.Take(); ok {
				l.handle(msg)
			}
		case p := <-l.updates:
			l.swapPolicy(p)
		case <-l.restatus:
			l.publishStatus(l.state.Load().(string), "replacing a stale status")
		case <-l.haWake:
			l.haCheck()
		case <-tick.C:
			l.reap()
			l.haCheck()
			l.checkAlarm()
		}
	}
}

// requestStatus never blocks: one pending request is as good as many.
func (l *plantLoop) requestStatus() {
	select {
	case l.restatus <- struct{}{}:
	default:
	}
}

// checkAlarm republishes the status when its alarm changed (raised or cleared).
func (l *plantLoop) checkAlarm() {
	if l.updateAlarm() {
		l.publishStatus(l.state.Load().(string), "alarm changed")
	}
}

// updateAlarm recomputes the status alarm (a relaxed step's shortfall, then the decision log's
// health) and reports whether it changed.
func (l *plantLoop) updateAlarm() bool {
	a := l.relaxedAlarm
	if dl := l.decisions.check(l.clock.Now()); dl != "" {
		a = joinMsg(a, dl)
	}
	if old, _ := l.alarm.Load().(string); a == old {
		return false
	}
	l.alarm.Store(a)
	if a != "" {
		l.m.alarm.WithLabelValues(l.cfg.ID).Set(1)
		l.log.Warn("alarm raised", zap.String("alarm", a))
	} else {
		l.m.alarm.WithLabelValues(l.cfg.ID).Set(0)
		l.log.Info("alarm cleared")
	}
	return true
}

// wakeHA never blocks: one pending wake-up is as good as many.
func (l *plantLoop) wakeHA() {
	select {
	case l.haWake <- struct{}{}:
	default:
	}
}

// haCheck acts on the election: it notices a change of role, and lets a standby claim the plant
// when the active daemon is gone or not answering (ha.go).
func (l *plantLoop) haCheck() {
	if l.ha == nil {
		return
	}
	is := l.ha.active()
	if is != l.wasActive {
		l.roleChanged(is)
	}
	if is {
		return
	}
	reason, epoch := l.ha.shouldClaim(l.clock.Now())
	if reason == "" {
		return
	}
	l.log.Warn("ha: claiming the plant", zap.String("reason", reason), zap.Uint64("epoch", epoch))
	l.track("status", l.sess.publish(l.topic("status"), 1, true, l.statusWithEpoch(l.state.Load().(string), "takeover: "+reason, epoch)))
}

func (l *plantLoop) roleChanged(active bool) {
	l.wasActive = active
	leader, _ := l.ha.leaderNode()
	if !active {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(0)
		l.adoptFrom = nil
		if up := l.ha.self; leader == up {
			l.log.Info("ha: not active on this connection until the broker hands back this daemon's claim")
		} else {
			l.log.Warn("ha: standby", zap.Stringer("active", leader))
		}
		return
	}
	l.m.haActive.WithLabelValues(l.cfg.ID).Set(1)
	epoch := l.ha.epochNow()
	if epoch == l.activeEpoch {
		// The same term on a new connection: the claim came back, nothing was taken over. A
		// measurement that arrived before it did was tagged standby but is nobody else's (the
		// others still count this daemon as active): answer the newest if there is still time.
		l.ha.takeOver()
		l.log.Info("ha: active again on the new connection", zap.Uint64("epoch", epoch))
		last := l.lastStandby
		l.lastStandby = standbyMsg{}
		if last.meas != nil && l.clock.Now().Before(last.received.Add(l.cfg.Deadline-l.cfg.DeadlineReserve)) {
			l.handle(inbound{meas: last.meas, env: last.env, received: last.received, retake: true, epoch: epoch, conn: l.sess.current()})
		}
		return
	}
	l.activeEpoch = epoch
	l.m.haTakeovers.WithLabelValues(l.cfg.ID).Inc()
	p, orphan := l.ha.takeOver()
	fields := []zap.Field{zap.Uint64("epoch", epoch)}
	if p != nil && l.lastPublished.Before(p.received) {
		// The other daemon acted after this one last did: number on from its actions, and
		// continue from its plan at the first step.
		l.actionSeq = max(l.actionSeq, p.seq+takeoverSeqGap)
		l.adoptFrom = p
		fields = append(fields, zap.Stringer("from", p.who), zap.Uint64("last_action_seq", p.seq), zap.Uint64("last_measurement_seq", p.measurementSeq))
	}
	l.log.Warn("ha: active", fields...)
	last := l.lastStandby
	l.lastStandby = standbyMsg{}
	if orphan != 0 && last.meas != nil && last.env.Seq == orphan {
		if now := l.clock.Now(); now.Before(last.received.Add(l.cfg.Deadline - l.cfg.DeadlineReserve)) {
			l.log.Info("ha: answering the measurement the previous active daemon left unanswered", zap.Uint64("seq", orphan))
			l.handle(inbound{meas: last.meas, env: last.env, received: last.received, retake: true, epoch: epoch, conn: l.sess.current()})
		}
	}
}

// adopt makes the controller continue from the last plan the previous active daemon published,
// shifted by the periods between that plan's measurement and this one.
func (l *plantLoop) adopt(received time.Time) {
	p := l.adoptFrom
	l.adoptFrom = nil
	dec, ok := l.family.(mpc.PlanDecoder)
	ad, ok2 := l.ctl.(interface{ Adopt(mpc.Plan, int) })
	if !ok || !ok2 || len(p.plan) == 0 || string(p.plan) == "null" {
		return
	}
	plan, err := dec.DecodePlan(p.plan)
	if err != nil {
		l.log.Warn("ha: the previous active daemon's last plan does not decode; starting without it", zap.Error(err))
		return
	}
	// The action answered a measurement about one period before the next was due; Step shifts
	// once, so shift here for every further period that passed.
	periods := int(received.Sub(p.received).Round(l.cfg.Period) / l.cfg.Period)
	for i := 1; i < periods && plan != nil; i++ {
		next, ok := plan.Shift()
		if !ok {
			plan = nil
			break
		}
		plan = next
	}
	if plan == nil {
		l.log.Info("ha: the previous active daemon's last plan is used up", zap.Int("periods", periods))
		return
	}
	ad.Adopt(plan, p.fallbacks)
	l.log.Info("ha: continuing from the previous active daemon's plan", zap.Uint64("action_seq", p.seq), zap.Int("periods_since", periods))
}

// swapPolicy runs between steps by construction: the loop is not inside handle.
func (l *plantLoop) swapPolicy(p LoadedPolicy) {
	old := l.policy.Version
	l.policy = p
	l.ctl.SetPolicy(p.Policy)
	l.policyVersion.Store(p.Version)
	l.m.policyInfo.DeleteLabelValues(l.cfg.ID, old)
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.log.Info("policy swapped", zap.String("from", old), zap.String("to", p.Version))
	l.publishStatus(l.state.Load().(string), "policy "+p.Version)
}

func (l *plantLoop) handle(msg inbound) {
	if msg.standby {
		l.standbyHandle(msg)
		return
	}
	if l.ha != nil && !l.wasActive {
		l.haCheck() // the role changed before its wake-up reached the loop
	}
	env, meas := msg.env, msg.meas
	deadline := msg.received.Add(l.cfg.Deadline)
	if now := l.clock.Now(); !now.Before(deadline.Add(-l.cfg.DeadlineReserve)) {
		// It waited behind a solve until no solve could finish in time; an action now would come
		// after the deadline.
		l.m.deadlineMisses.WithLabelValues(l.cfg.ID).Inc()
		l.rejectMsg(reject(wire.ReasonDeadline, &env.Seq, "measurement %d waited %v behind earlier steps: past its deadline before its solve could start",
			env.Seq, now.Sub(msg.received).Round(time.Millisecond)), now)
		return
	}
	if l.adoptFrom != nil {
		l.adopt(msg.received)
	}

	l.actionSeq++
	if l.rec != nil {
		l.rec.begin(l.actionSeq, env.Seq, l.policy.Version, meas.Instance())
	}
	t0 := l.clock.Now()
	// The solver aims short of the deadline: it checks the time between NLPs and cannot stop one
	// midway, and the action still has to be encoded and published.
	d, err := l.ctl.Step(meas, deadline.Add(-l.cfg.DeadlineReserve))
	solve := l.clock.Now().Sub(t0)
	l.m.solveSeconds.WithLabelValues(l.cfg.ID).Observe(solve.Seconds())
	if err != nil {
		l.actionSeq-- // no action went out under this number
		l.rejectMsg(reject(wire.ReasonStep, &env.Seq, "step: %v", err), l.clock.Now())
		return
	}

	pub := l.clock.Now()
	a := newAction(l.cfg.ID, l.actionSeq, env.Seq, pub, env.TSms, l.cfg.Period, l.cfg.Deadline, &d, l.policy.Version, l.policy.Policy != nil)
	if l.ha != nil {
		a.Node, a.Instance, a.Epoch = l.ha.self.node, l.ha.self.instance, msg.epoch
	}
	payload, err := json.Marshal(a)
	if err != nil {
		// Only a family producing invalid JSON for apply or plan can get here: publish the safe
		// action rather than nothing.
		l.log.Error("action does not encode; publishing the safe action", zap.Error(err))
		a.Apply, a.Plan, a.Status, a.Safe = l.family.SafeAction(), json.RawMessage("null"), mpc.StatusFallback, true
		a.Reason = joinMsg(a.Reason, "action encoding failed: "+err.Error())
		if payload, err = json.Marshal(a); err != nil {
			l.rejectMsg(reject(wire.ReasonStep, &env.Seq, "action does not encode: %v", err), pub)
			return
		}
	}
	if l.withhold(msg, deadline, &d) {
		return
	}
	if l.ha != nil {
		l.track("action", l.sess.publishOn(msg.conn, l.topic("action"), 1, false, payload))
	} else {
		l.track("action", l.sess.publish(l.topic("action"), 1, false, payload))
	}
	done := l.clock.Now()
	l.lastPublished = done
	if l.ha != nil {
		l.ha.answered(env.Seq, msg.epoch)
	}

	l.m.overheadSeconds.WithLabelValues(l.cfg.ID).Observe(max(0, done.Sub(msg.received)-solve).Seconds())
	l.m.actions.WithLabelValues(l.cfg.ID, a.Status).Inc()
	l.m.step.observe(l.cfg.ID, &d)
	if l.policy.Policy != nil {
		l.m.proposals.WithLabelValues(l.cfg.ID).Add(float64(d.Agent.Proposed))
		l.m.feasible.WithLabelValues(l.cfg.ID).Add(float64(d.Agent.Feasible))
		l.m.accepted.WithLabelValues(l.cfg.ID).Add(float64(d.Agent.Accepted))
	}
	state := wire.StateOnline
	l.relaxedAlarm = ""
	if d.Relaxed != nil {
		// The plant cannot be held within its limits: the action is the soft optimum, and the status
		// says so until a forecast is servable again.
		state = wire.StateDegraded
		l.relaxedAlarm = "hard limits cannot be held: " + d.Relaxed.Shortfall
		l.m.relaxedSteps.WithLabelValues(l.cfg.ID).Inc()
		l.log.Warn("relaxed", zap.Uint64("seq", env.Seq), zap.String("limit", d.Relaxed.Limit),
			zap.Float64("max_violation", d.Relaxed.MaxViolation), zap.Int("first_step", d.Relaxed.FirstStep),
			zap.Float64("unserved", d.Relaxed.Unserved), zap.String("proof", d.Relaxed.Proof))
	}
	if d.Status == mpc.StatusFallback {
		state = wire.StateDegraded
		kind := "shifted"
		if d.Safe {
			kind = "safe"
		}
		l.m.fallbacks.WithLabelValues(l.cfg.ID, kind).Inc()
		l.log.Warn("fallback", zap.Uint64("seq", env.Seq), zap.String("reason", d.Reason), zap.Bool("safe", d.Safe))
	}
	if alarmChanged := l.updateAlarm(); alarmChanged || state != l.state.Load().(string) {
		l.publishStatus(state, d.Reason)
	}
	if l.rec != nil {
		l.rec.finish(&d)
	}
	l.checkAlarm() // the records just written may have been dropped
	l.log.Debug("action", zap.Uint64("seq", a.Seq), zap.Uint64("measurement_seq", env.Seq), zap.String("status", a.Status),
		zap.Duration("solve", solve), zap.Int("iterations", d.Iterations))
	l.kick()
}

// withhold decides, just before publishing, that an action must not go out, and accounts for it:
// an HA daemon whose measurement's connection is gone (the broker has sent, or will send, its Last
// Will, and a standby may answer in its place), or any daemon past the measurement's deadline (a
// solve that overran, a process that was stopped). A late action is never published: the plant
// keeps its last valid one, which is what it does when no action comes at all.
func (l *plantLoop) withhold(msg inbound, deadline time.Time, d *mpc.Decision) bool {
	seq := msg.env.Seq
	switch now := l.clock.Now(); {
	case l.ha != nil && !l.sess.alive(msg.conn):
		l.m.haWithheld.WithLabelValues(l.cfg.ID).Inc()
		l.log.Warn("ha: the connection the measurement came on is gone; action withheld", zap.Uint64("measurement_seq", seq))
	case now.After(deadline):
		l.m.deadlineMisses.WithLabelValues(l.cfg.ID).Inc()
		l.log.Warn("step ended after the deadline; action withheld", zap.Uint64("seq", seq), zap.Duration("late", now.Sub(deadline)))
		l.rejectMsg(reject(wire.ReasonDeadline, &seq, "step for measurement %d ended %v after its deadline: action withheld",
			seq, now.Sub(deadline).Round(time.Millisecond)), now)
	default:
		return false
	}
	if l.rec != nil {
		l.rec.finish(d)
	}
	return true
}

// standbyHandle keeps a measurement that arrived (valid, judged by the gate) while another daemon
// was active: the measurement itself, to answer it if this daemon takes over from one that went
// offline without answering it (ha.go). It answers nothing.
func (l *plantLoop) standbyHandle(msg inbound) {
	l.lastStandby = standbyMsg{meas: msg.meas, env: msg.env, received: msg.received}
	l.haCheck()
	l.kick()
}

func (l *plantLoop) rejectMsg(r *rejection, now time.Time) {
	l.m.rejected.WithLabelValues(l.cfg.ID, r.reason).Inc()
	if !l.active() {
		// An HA daemon that lost the plant meanwhile: the error topic is the active one's.
		l.log.Info("measurement not answered (standby now)", zap.String("reason", r.reason), zap.String("error", r.msg))
		return
	}
	l.log.Warn("measurement rejected", zap.String("reason", r.reason), zap.String("error", r.msg))
	b, _ := json.Marshal(wire.ErrorMessage{V: 1, TSms: now.UnixMilli(), Seq: r.seq, Error: r.msg, Reason: r.reason, Plant: l.cfg.ID})
	l.track("error", l.sess.publish(l.topic("error"), 0, false, b))
}

func (l *plantLoop) publishStatus(state, reason string) {
	l.state.Store(state)
	if !l.active() {
		return // the retained status is the active daemon's
	}
	l.track("status", l.sess.publish(l.topic("status"), 1, true, l.statusPayload(state, reason)))
	l.log.Info("status", zap.String("state", state), zap.String("reason", reason))
}

// track keeps a publish token to check later without waiting for it now.
func (l *plantLoop) track(kind string, tok mqtt.Token) {
	l.pending = append(l.pending, pendingPublish{kind, tok})
	if len(l.pending) >= 64 {
		l.reap()
	}
}

// reap counts the publishes the broker refused or that failed; unfinished ones are kept, up to a
// bound past which they are given up on (a long outage must not grow the list without end).
func (l *plantLoop) reap() {
	keep := l.pending[:0]
	for _, p := range l.pending {
		select {
		case <-p.tok.Done():
			if err := p.tok.Error(); err != nil {
				l.m.publishFailures.WithLabelValues(l.cfg.ID, p.kind).Inc()
				l.log.Warn("publish failed", zap.String("kind", p.kind), zap.Error(err))
			}
		default:
			keep = append(keep, p)
		}
	}
	if len(keep) > 1024 {
		keep = keep[len(keep)-1024:]
	}
	clear(l.pending[len(keep):])
	l.pending = keep
}

// readiness says whether this plant's loop is closed: session up, and a measurement received
// recently. "Recently" is within period + max_age: measurements arrive once a period, so the next one
// is due one period after the last and may be up to max_age late. Before the first measurement the
// plant gets the same allowance counted from its first subscription, so a freshly started daemon is
// ready while it waits for the plant, and becomes unready if the plant never shows up.
func (l *plantLoop) readiness(now time.Time) (bool, string) {
	if !l.sess.Connected() {
		return false, "mqtt session not connected"
	}
	ok, why := l.freshness(now)
	if l.ha != nil {
		why += " (ha " + l.ha.role() + ")"
	}
	return ok, why
}

func (l *plantLoop) freshness(now time.Time) (bool, string) {
	allow := l.cfg.Period + l.cfg.MaxAge
	last := l.lastAccepted.Load()
	if last == 0 {
		sub := l.subscribedAt.Load()
		if sub == 0 {
			return false, "not subscribed yet"
		}
		if age := now.Sub(time.Unix(0, sub)); age > allow {
			return false, "no measurement since subscribing " + age.Round(time.Millisecond).String() + " ago"
		}
		return true, "waiting for the first measurement"
	}
	if age := now.Sub(time.Unix(0, last)); age > allow {
		return false, "last measurement " + age.Round(time.Millisecond).String() + " ago"
	}
	return true, "ok"
}
