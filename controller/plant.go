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

// plantLoop is one plant's actor. Its goroutine owns the plant's state — sequence numbers, status,
// alarm, controller, policy and the HA election — and everything else reaches it as events in
// arrival order (events.go) and through the updates channel, in the manner of etcd's raft node: the
// MQTT callbacks and the reload path never touch the state. What other goroutines may read of it
// (readiness, the retained status on reconnection, whether a rejection's error message is this
// daemon's to send) the loop publishes as one immutable view.
type plantLoop struct {
	cfg    configs.Plant
	topic  func(kind string) string
	family mpc.Family
	ctl    Stepper
	slots  solveSlots        // shared by the daemon's loops (slots.go); nil: no bound
	rec    *decisionRecorder // nil without a decision log
	in     *lanes
	sess   *session // its lifecycle and readiness
	out    outlet   // where the loop publishes: the session, or a test's recorder
	clock  Clock
	log    *zap.Logger
	m      *metrics
	plants []string
	// beatEvery is how often an idle loop proves it is alive (see watchdog.go).
	beatEvery time.Duration
	kick      func() // tells the watchdog a cycle completed

	updates chan LoadedPolicy
	// quit is closed when the loop stops, so that a callback waiting for room in the control
	// lane gives up.
	quit chan struct{}

	// owned by the loop goroutine
	// ha is the plant's active/standby election (nil without HA, when the daemon is always
	// active), folded in arrival order as the loop takes each event in its turn. ahead is the same
	// fold over every control event taken out of the lane so far, ahead of its turn: the role at
	// the latest point of the broker's order this loop knows, which decides whether an error
	// message is still this daemon's to send after a long step (rejectMsg).
	ha, ahead *election
	// held is the measurement in hand, queue the control events taken out of their lane, both
	// waiting for their turn in arrival order (work).
	held  *inbound
	queue []event

	actionSeq uint64
	policy    LoadedPolicy
	state     string // the retained status's state
	alarm     string // the retained status's alarm ("" none)
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

	// written by the loop, read by other goroutines
	view atomic.Pointer[plantView]
	// written by the session's callbacks, read by readiness
	lastAccepted atomic.Int64 // receipt time (Unix ns) of the last accepted measurement; 0: none
	subscribedAt atomic.Int64 // first subscription (Unix ns), for readiness before any measurement
	heartbeat    atomic.Int64 // last time the loop went round (Unix ns), for the watchdog
	// recentSolves are the solve times the controller reported for the last steps (a ring), for
	// judging whether a measurement and a newer one waiting behind it both fit (passOver).
	recentSolves [8]time.Duration
	solvesSeen   int
	// The solve in hand (0: none): when it started and its measurement's own end, before any
	// shortening for a newer one (Unix ns), and the slowest recent solve; wasCut says whether cutShort ended it. The solve's Interrupt (cutShort) reads
	// them, maybe from the engine's goroutines.
	solveStart, solveEnd, solveEst atomic.Int64
	wasCut                         atomic.Bool
	// stopping is set when the daemon stops: the solve in hand then ends early too.
	stopping atomic.Bool
}

// plantView is what the loop shows other goroutines of its state; it is replaced, never changed.
type plantView struct {
	state, alarm, policyVersion string
	// standby: an HA daemon that is not the plant's active one (ha.go) at the latest point of the
	// broker's order the loop knows (the fold ahead).
	standby bool
}

// outlet is what the loop needs of its MQTT session: publish on the connection in use, or on one
// connection only, and whether a connection is still the one in use.
type outlet interface {
	publish(topic string, qos byte, retained bool, payload []byte) mqtt.Token
	publishOn(cn *mqttConn, topic string, qos byte, retained bool, payload []byte) mqtt.Token
	alive(cn *mqttConn) bool
	current() *mqttConn
}

type standbyMsg struct {
	meas     mpc.Measurement
	env      wire.Envelope
	received time.Time
}

type pendingPublish struct {
	kind string
	tok  mqtt.Token
}

func (l *plantLoop) init(p LoadedPolicy) {
	l.policy = p
	l.ctl.SetPolicy(p.Policy)
	l.state = wire.StateOnline
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.updates = make(chan LoadedPolicy, 1)
	l.quit = make(chan struct{})
	l.in = newLanes(l.cfg.Mailbox, l.quit)
	if l.ha != nil {
		l.ahead = newElection(l.ha.self, l.ha.period, l.ha.takeover)
	}
	l.heartbeat.Store(l.clock.Now().UnixNano())
	if l.ha == nil {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(1)
	} else {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(0)
	}
	l.show()
}

// show publishes the loop's view after a change of state, alarm, policy or role.
func (l *plantLoop) show() {
	l.view.Store(&plantView{state: l.state, alarm: l.alarm, policyVersion: l.policy.Version,
		standby: l.ahead != nil && !l.ahead.active()})
}

// active reports whether this daemon answers the plant's measurements now.
func (l *plantLoop) active() bool { return l.ha == nil || l.ha.active() }

// statusPayload is the retained status for state (reason optional).
func (l *plantLoop) statusPayload(state, reason string) []byte {
	var epoch uint64
	if l.ha != nil {
		epoch = l.ha.epoch
	}
	return l.statusWithEpoch(state, reason, epoch)
}

// statusWithEpoch reads the published view, so that the session's connect handler may call it too.
func (l *plantLoop) statusWithEpoch(state, reason string, epoch uint64) []byte {
	v := l.view.Load()
	st := wire.Status{V: 1, State: state, TSms: l.clock.Now().UnixMilli(), Plant: l.cfg.ID,
		Plants: l.plants, PolicyVersion: v.policyVersion, Reason: reason, Alarm: v.alarm}
	if l.ha != nil {
		st.Node, st.Instance, st.Epoch = l.ha.self.node, l.ha.self.instance, epoch
	}
	b, _ := json.Marshal(st)
	return b
}

// run serves the plant until ctx ends, then publishes offline and closes the session.
func (l *plantLoop) run(ctx context.Context) error {
	// A solve in hand when the daemon stops ends at its next look at the time (cutShort).
	stopCut := context.AfterFunc(ctx, func() { l.stopping.Store(true) })
	defer stopCut()
	l.sess.start()
	defer func() {
		var offline []byte
		if l.active() { // a standby leaves the active daemon's status alone
			offline = l.statusPayload(wire.StateOffline, "daemon stopped")
		}
		l.sess.stop(offline, 2*time.Second)
	}()
	defer close(l.quit) // before the session stops: a callback waiting on the control lane lets go
	tick := time.NewTicker(l.beatEvery)
	defer tick.Stop()
	for {
		l.heartbeat.Store(l.clock.Now().UnixNano())
		var more <-chan struct{} // ready while something taken out of a lane waits for its turn
		if l.held != nil || len(l.queue) > 0 {
			more = closedCh
		}
		var meas <-chan inbound // one measurement in hand at a time
		if l.held == nil {
			meas = l.in.meas
		}
		select {
		case <-ctx.Done():
			return nil
		case ev := <-l.in.control:
			l.enqueue(ev)
			l.work()
		case m := <-meas:
			l.held = &m
			l.work()
		case <-more:
			l.work()
		case p := <-l.updates:
			l.swapPolicy(p)
		case <-tick.C:
			l.reap()
			l.haCheck()
			l.checkAlarm()
		}
	}
}

// work takes what has arrived in arrival order: every control event that came before the next
// measurement, then that measurement, and returns after one measurement (a step) so that a policy
// update is never starved by a backlog. The order of looking matters (events.go): control events
// first, then a measurement if none is in hand, then the control events again, so that whatever
// arrived before the measurement in hand, or before the first control event waiting, is seen.
func (l *plantLoop) work() {
	for {
		l.takeControl()
		if l.held == nil {
			select {
			case m := <-l.in.meas:
				l.held = &m
				l.takeControl()
			default:
			}
		}
		switch {
		case len(l.queue) > 0 && (l.held == nil || l.queue[0].n < l.held.n):
			ev := l.queue[0]
			copy(l.queue, l.queue[1:])
			l.queue[len(l.queue)-1] = event{}
			l.queue = l.queue[:len(l.queue)-1]
			l.apply(ev)
		case l.held != nil:
			m := *l.held
			l.held = nil
			if l.passOver(&m) {
				continue
			}
			l.arrive(m)
			return
		default:
			l.haCheck() // caught up: a claim may be due
			return
		}
	}
}

// passOver decides for a measurement taken from the lane while a newer valid one already waits
// behind it, with no control event between them that could change the loop's role. Each deadline
// runs from its measurement's receipt, so answering the older one first spends the newer one's
// time, and a plant applies only an action that answers its latest measurement
// (specs/interfaces.md). The older one is still answered when the recent solves say both fit:
// its solve then ends early enough to leave the newer one the time of the slowest recent solve.
// Otherwise it is passed over with an error message (reason "superseded"), so that the newest is
// solved in its time rather than reaching its deadline behind the older ones.
func (l *plantLoop) passOver(m *inbound) bool {
	if len(l.in.meas) == 0 || len(l.queue) > 0 || len(l.in.control) > 0 || (l.ha != nil && !l.ha.active()) {
		return false
	}
	est := l.solveEstimate()
	// The newer one arrived later and was taken later, so its deadline is no earlier than this one's.
	end := deadlineOf(&l.cfg, m.received, m.env.TSms).solveBy()
	now := l.clock.Now()
	if est == 0 || !now.Add(2*est).After(end) {
		if est > 0 {
			m.solveBy = end.Add(-est)
		}
		return false
	}
	l.rejectMsg(wire.Reject(wire.ReasonSuperseded, &m.env.Seq, "measurement %d passed over: a newer one arrived before its solve started, and recent solves (up to %v) leave no time to answer both",
		m.env.Seq, est.Round(time.Millisecond)), now)
	return true
}

// cutShort is the solves' Interrupt (gbd.Settings): true, during a step, once the daemon is
// stopping, or once a newer valid measurement waits and the time left to this measurement's own
// end (a lower bound of the newer one's) is no more than what the newer one is likely to need: the slowest recent solve, or this solve's own time
// so far when that is longer (no history yet, or a harder instance than usual).
func (l *plantLoop) cutShort() bool {
	start := l.solveStart.Load()
	if start == 0 {
		return false
	}
	if !l.stopping.Load() {
		if len(l.in.meas) == 0 {
			return false
		}
		now := l.clock.Now().UnixNano()
		if need := max(l.solveEst.Load(), now-start); l.solveEnd.Load()-now > need {
			return false
		}
	}
	l.wasCut.Store(true)
	return true
}

// noteSolve keeps a step's solve time (for a cut-short one, the time until the cut: a lower
// bound), for solveEstimate.
func (l *plantLoop) noteSolve(d time.Duration) {
	l.recentSolves[l.solvesSeen%len(l.recentSolves)] = d
	l.solvesSeen++
}

// solveEstimate is the slowest of the recent solves (0 before the first).
func (l *plantLoop) solveEstimate() time.Duration {
	var m time.Duration
	for _, d := range l.recentSolves {
		m = max(m, d)
	}
	return m
}

// enqueue puts a control event taken out of its lane in the loop's queue, and folds it into the
// fold ahead.
func (l *plantLoop) enqueue(ev event) {
	l.queue = append(l.queue, ev)
	if l.ahead == nil {
		return
	}
	switch ev.kind {
	case evConnected:
		l.ahead.connected(ev.conn.gen, ev.at)
	case evStatus:
		l.ahead.observe(ev.claim, ev.conn.gen, ev.at)
	}
	if l.ahead.active() == l.view.Load().standby {
		l.show() // the role others see is the latest known one
	}
}

// caughtUp reports whether the loop has taken everything handed over so far.
func (l *plantLoop) caughtUp() bool {
	return l.held == nil && len(l.queue) == 0 && len(l.in.control) == 0 && len(l.in.meas) == 0
}

// takeControl moves every control event waiting in its lane to the loop's queue.
func (l *plantLoop) takeControl() {
	for {
		select {
		case ev := <-l.in.control:
			l.enqueue(ev)
		default:
			return
		}
	}
}

// apply folds one control event.
func (l *plantLoop) apply(ev event) {
	switch ev.kind {
	case evConnected:
		if l.ha != nil {
			// Until its own claim comes back on this connection, this daemon is not active on it
			// (ha.go, "Connections").
			l.ha.connected(ev.conn.gen, ev.at)
			l.haCheck()
		}
	case evSubscribed:
		if l.ha != nil {
			l.ha.started(ev.at)
			l.haCheck()
		}
	case evStatus:
		// The plant's own status topic is watched because a broker may deliver the Last Will of a
		// connection it has only just noticed is dead after this daemon reconnected and published
		// online; seeing "offline" while connected (or, with HA, another node's claim while
		// active), the loop republishes its real state, so the retained status heals itself.
		c := ev.claim
		heal, changed := c.offline, false
		if l.ha != nil {
			was, is := l.ha.observe(c, ev.conn.gen, ev.at)
			heal, changed = l.ha.heal(c), was != is || c.offline
		}
		if heal && l.out.alive(ev.conn) {
			l.log.Info("retained status is not this daemon's; republishing", zap.Stringer("seen", c.who), zap.Bool("seen_offline", c.offline))
			l.publishStatus(l.state, "replacing a stale status")
		}
		if changed {
			l.haCheck() // after the repair, as the fold's outcome may claim or answer an orphan
		}
	case evAction:
		if l.ha != nil && l.ha.observeAction(ev.action, ev.at) {
			a := ev.action
			l.m.haForeignActions.WithLabelValues(l.cfg.ID).Inc()
			l.log.Error("another daemon answered a measurement while this one is active", zap.String("node", a.Node),
				zap.Uint64("measurement_seq", a.MeasurementSeq), zap.Uint64("epoch", a.Epoch))
		}
	}
}

// arrive tags a measurement with the election as it stood when the measurement arrived (every
// earlier control event is folded by now, no later one yet) and steps on it, or keeps it as a
// standby.
func (l *plantLoop) arrive(m inbound) {
	if l.ha != nil {
		if !l.ha.active() {
			l.ha.accepted(m.env.Seq, m.received)
			m.standby = true
		} else {
			m.epoch = l.ha.epoch
		}
	}
	l.handle(m)
}

// checkAlarm republishes the status when its alarm changed (raised or cleared).
func (l *plantLoop) checkAlarm() {
	if l.updateAlarm() {
		l.publishStatus(l.state, "alarm changed")
	}
}

// updateAlarm recomputes the status alarm (a relaxed step's shortfall, then the decision log's
// health) and reports whether it changed.
func (l *plantLoop) updateAlarm() bool {
	a := l.relaxedAlarm
	if dl := l.decisions.check(l.clock.Now()); dl != "" {
		a = joinMsg(a, dl)
	}
	if a == l.alarm {
		return false
	}
	l.alarm = a
	l.show()
	if a != "" {
		l.m.alarm.WithLabelValues(l.cfg.ID).Set(1)
		l.log.Warn("alarm raised", zap.String("alarm", a))
	} else {
		l.m.alarm.WithLabelValues(l.cfg.ID).Set(0)
		l.log.Info("alarm cleared")
	}
	return true
}

// haCheck acts on the election: it notices a change of role, and lets a standby claim the plant
// when the active daemon is gone or not answering (ha.go). A claim waits until the loop has taken
// everything that arrived: a loop catching up after a long step must not judge a measurement
// unanswered by the clock of now when the answer is still behind it in the lanes.
func (l *plantLoop) haCheck() {
	if l.ha == nil {
		return
	}
	is := l.ha.active()
	if is != l.wasActive {
		l.roleChanged(is)
	}
	if is || !l.caughtUp() {
		return
	}
	reason, epoch := l.ha.shouldClaim(l.clock.Now())
	if reason == "" {
		return
	}
	l.log.Warn("ha: claiming the plant", zap.String("reason", reason), zap.Uint64("epoch", epoch))
	l.track("status", l.out.publish(l.topic("status"), 1, true, l.statusWithEpoch(l.state, "takeover: "+reason, epoch)))
}

func (l *plantLoop) roleChanged(active bool) {
	l.wasActive = active
	l.show()
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
	epoch := l.ha.epoch
	if epoch == l.activeEpoch {
		// The same term on a new connection: the claim came back, nothing was taken over. A
		// measurement that arrived before it did was tagged standby but is nobody else's (the
		// others still count this daemon as active): answer the newest if there is still time.
		l.ha.takeOver()
		l.log.Info("ha: active again on the new connection", zap.Uint64("epoch", epoch))
		last := l.lastStandby
		l.lastStandby = standbyMsg{}
		if last.meas != nil && l.clock.Now().Before(deadlineOf(&l.cfg, last.received, last.env.TSms).solveBy()) {
			l.handle(inbound{meas: last.meas, env: last.env, received: last.received, retake: true, epoch: epoch, conn: l.out.current()})
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
		if now := l.clock.Now(); now.Before(deadlineOf(&l.cfg, last.received, last.env.TSms).solveBy()) {
			l.log.Info("ha: answering the measurement the previous active daemon left unanswered", zap.Uint64("seq", orphan))
			l.handle(inbound{meas: last.meas, env: last.env, received: last.received, retake: true, epoch: epoch, conn: l.out.current()})
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
	l.show()
	l.m.policyInfo.DeleteLabelValues(l.cfg.ID, old)
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.log.Info("policy swapped", zap.String("from", old), zap.String("to", p.Version))
	l.publishStatus(l.state, "policy "+p.Version)
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
	deadline := deadlineOf(&l.cfg, msg.received, env.TSms)
	if now := l.clock.Now(); !now.Before(deadline.solveBy()) {
		// It waited behind a solve until no solve could finish in time; an action now would come
		// after the deadline.
		l.m.deadlineMisses.WithLabelValues(l.cfg.ID).Inc()
		l.rejectMsg(wire.Reject(wire.ReasonDeadline, &env.Seq, "measurement %d waited %v behind earlier steps: past %s before its solve could start",
			env.Seq, now.Sub(msg.received).Round(time.Millisecond), deadline.what()), now)
		return
	}
	waitFrom := l.clock.Now()
	if !l.slots.acquire(deadline.solveBy()) {
		now := l.clock.Now()
		l.m.deadlineMisses.WithLabelValues(l.cfg.ID).Inc()
		l.rejectMsg(wire.Reject(wire.ReasonDeadline, &env.Seq, "measurement %d waited %v for a free core (other plants' solves): past %s before its solve could start",
			env.Seq, now.Sub(waitFrom).Round(time.Millisecond), deadline.what()), now)
		return
	}
	// The slot is a core for the solve: it goes back as soon as the solve ends, not after the
	// publish, the decision record, the metrics and the logs, which wait on the broker, the disk
	// and the logger's lock (held through them, the slots idled the cores while every other loop
	// queued for one: 256 plants on 2 cores used 0.6 of them with two thirds of the steps late).
	held := true
	release := func() {
		if held {
			held = false
			l.slots.release()
		}
	}
	defer release()
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
	end := deadline.solveBy()
	solveBy := end
	if !msg.solveBy.IsZero() && msg.solveBy.Before(solveBy) {
		solveBy = msg.solveBy // a newer measurement waits behind this one (passOver)
	}
	// A newer measurement arriving during the solve makes this answer one the plant will not
	// apply: from the point where going on would leave the newer one less than it is likely to
	// need, the solve ends with what it has (cutShort). The newer one's deadline is no earlier
	// than this measurement's own end, not the shortened solveBy, whose shortening already left
	// the newer one its time.
	l.wasCut.Store(false)
	l.solveEst.Store(int64(l.solveEstimate()))
	l.solveEnd.Store(end.UnixNano())
	l.solveStart.Store(t0.UnixNano())
	d, err := l.ctl.Step(meas, solveBy)
	release()
	l.solveStart.Store(0)
	cut := l.wasCut.Load()
	solve := l.clock.Now().Sub(t0)
	l.m.solveSeconds.WithLabelValues(l.cfg.ID).Observe(solve.Seconds())
	if err != nil {
		l.actionSeq-- // no action went out under this number
		l.rejectMsg(wire.Reject(wire.ReasonStep, &env.Seq, "step: %v", err), l.clock.Now())
		return
	}

	if cut {
		l.m.cutShort.WithLabelValues(l.cfg.ID).Inc()
		why := "a newer measurement was waiting"
		if l.stopping.Load() {
			why = "the daemon is stopping"
		}
		d.Reason = joinMsg(d.Reason, "solve cut short: "+why)
		l.noteSolve(solve) // what it would have needed is at least this
	} else {
		l.noteSolve(time.Duration(d.SolveSeconds * float64(time.Second)))
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
			l.rejectMsg(wire.Reject(wire.ReasonStep, &env.Seq, "action does not encode: %v", err), pub)
			return
		}
	}
	if l.withhold(msg, deadline, &d) {
		return
	}
	if l.ha != nil {
		l.track("action", l.out.publishOn(msg.conn, l.topic("action"), 1, false, payload))
	} else {
		l.track("action", l.out.publish(l.topic("action"), 1, false, payload))
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
		l.m.benched.WithLabelValues(l.cfg.ID).Add(float64(d.Agent.Benched))
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
	} else if r := d.Result; r != nil && r.Status == gbd.StatusFailed {
		// A solver failed after the solve had an incumbent (a CBC worker crashed, say): the action is
		// that incumbent, marked gap; the journal says what failed.
		l.log.Warn("solver failed; the action is the incumbent", zap.Uint64("seq", env.Seq), zap.String("reason", d.Reason))
	}
	if alarmChanged := l.updateAlarm(); alarmChanged || state != l.state {
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
// Will, and a standby may answer in its place), or any daemon past the measurement's effective
// deadline or the action's expiry (a solve that overran, a process that was stopped; expiry.go). A
// late action is never published: the plant keeps its last valid one, which is what it does when
// no action comes at all.
func (l *plantLoop) withhold(msg inbound, deadline stepDeadline, d *mpc.Decision) bool {
	seq := msg.env.Seq
	switch now := l.clock.Now(); {
	case l.ha != nil && !l.out.alive(msg.conn):
		l.m.haWithheld.WithLabelValues(l.cfg.ID).Inc()
		l.log.Warn("ha: the connection the measurement came on is gone; action withheld", zap.Uint64("measurement_seq", seq))
	case deadline.late(now):
		l.m.deadlineMisses.WithLabelValues(l.cfg.ID).Inc()
		l.log.Warn("step ended after the deadline; action withheld", zap.Uint64("seq", seq), zap.Duration("late", now.Sub(deadline.at)),
			zap.Bool("by_expiry", deadline.byExpiry))
		l.rejectMsg(wire.Reject(wire.ReasonDeadline, &seq, "step for measurement %d ended %v after %s: action withheld",
			seq, now.Sub(deadline.at).Round(time.Millisecond), deadline.what()), now)
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

func (l *plantLoop) rejectMsg(r *wire.Rejection, now time.Time) {
	l.m.rejected.WithLabelValues(l.cfg.ID, r.Reason).Inc()
	if l.ha != nil {
		// Whose error topic it is now decides, with everything that arrived during the step: the
		// fold ahead.
		l.takeControl()
	}
	if l.ahead != nil && !l.ahead.active() {
		// An HA daemon that lost the plant meanwhile: the error topic is the active one's.
		l.log.Info("measurement not answered (standby now)", zap.String("reason", r.Reason), zap.String("error", r.Msg))
		return
	}
	l.log.Warn("measurement rejected", zap.String("reason", r.Reason), zap.String("error", r.Msg))
	b, _ := json.Marshal(wire.ErrorOf(r, l.cfg.ID, now.UnixMilli(), 0))
	l.track("error", l.out.publish(l.topic("error"), 0, false, b))
}

func (l *plantLoop) publishStatus(state, reason string) {
	if state != l.state {
		l.state = state
		l.show()
	}
	if !l.active() {
		return // the retained status is the active daemon's
	}
	l.track("status", l.out.publish(l.topic("status"), 1, true, l.statusPayload(state, reason)))
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
		role := "active"
		if l.view.Load().standby {
			role = "standby"
		}
		why += " (ha " + role + ")"
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
