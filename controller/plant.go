package controller

import (
	"context"
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

// plantLoop is one plant's actor: a thin driver around the plant's control core (core.go). Its
// goroutine owns the core and everything else reaches it as events in arrival order (events.go)
// and through the updates channel, in the manner of etcd's raft node: the MQTT callbacks and the
// reload path never touch the state. The loop hands each event to the core and carries out what
// the core returns — publish, count, log, record, wait for a core, run a solve — and decides
// nothing itself. What other goroutines may read of the state (readiness, the retained status on
// reconnection, whether a rejection's error message is this daemon's to send) it publishes as one
// immutable view.
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
	// ha is the plant's active/standby election (nil without HA), handed to the core at init;
	// the driver only asks whether there is one.
	ha *election
	// beatEvery is how often an idle loop proves it is alive (see watchdog.go).
	beatEvery time.Duration
	kick      func() // tells the watchdog a cycle completed

	updates chan LoadedPolicy
	// quit is closed when the loop stops, so that a callback waiting for room in the control
	// lane gives up.
	quit chan struct{}

	// owned by the loop goroutine
	core   *core
	policy LoadedPolicy
	// held is the measurement in hand, queue the control events taken out of their lane, both
	// waiting for their turn in arrival order (work).
	held    *inbound
	queue   []event
	pending []pendingPublish
	// decisions follows the decision log's health for the status alarm (nil: no log).
	decisions *decisionAlarm

	// written by the loop, read by other goroutines
	view atomic.Pointer[plantView]
	// written by the session's callbacks, read by readiness
	lastAccepted atomic.Int64 // receipt time (Unix ns) of the last accepted measurement; 0: none
	subscribedAt atomic.Int64 // first subscription (Unix ns), for readiness before any measurement
	heartbeat    atomic.Int64 // last time the loop went round (Unix ns), for the watchdog
	// cut is the core's rule for the solve in hand (nil: none), and wasCut whether it ended the
	// solve; the solve's Interrupt (cutShort) reads them, maybe from the engine's goroutines.
	cut    atomic.Pointer[cutRule]
	wasCut atomic.Bool
	// stopping is set when the daemon stops: the solve in hand then ends early too.
	stopping atomic.Bool
}

// outlet is what the loop needs of its MQTT session: publish on the connection in use, or on one
// connection only, and whether a connection is still the one in use.
type outlet interface {
	publish(topic string, qos byte, retained bool, payload []byte) mqtt.Token
	publishOn(cn *mqttConn, topic string, qos byte, retained bool, payload []byte) mqtt.Token
	alive(cn *mqttConn) bool
	current() *mqttConn
}

type pendingPublish struct {
	kind string
	tok  mqtt.Token
}

func (l *plantLoop) init(p LoadedPolicy) {
	l.policy = p
	l.ctl.SetPolicy(p.Policy)
	l.core = newCore(l.cfg, l.plants, l.ha, l.family.SafeAction, p)
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.updates = make(chan LoadedPolicy, 1)
	l.quit = make(chan struct{})
	l.in = newLanes(l.cfg.Mailbox, l.quit)
	l.heartbeat.Store(l.clock.Now().UnixNano())
	if l.ha == nil {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(1)
	} else {
		l.m.haActive.WithLabelValues(l.cfg.ID).Set(0)
	}
	l.show()
}

// show publishes the core's view.
func (l *plantLoop) show() { l.view.Store(l.core.view()) }

// statusPayload is the retained status for state without HA (reason optional), from the view, so
// that the session's connect handler may call it.
func (l *plantLoop) statusPayload(state, reason string) []byte {
	return l.statusWithEpoch(state, reason, 0)
}

// statusWithEpoch reads the published view, so that the session's callbacks may call it too.
func (l *plantLoop) statusWithEpoch(state, reason string, epoch uint64) []byte {
	var self *member
	if l.ha != nil {
		self = &l.ha.self // set once, before the loop starts
	}
	return statusMsg(l.cfg.ID, l.plants, self, l.view.Load(), state, reason, epoch, l.clock.Now())
}

// run serves the plant until ctx ends, then publishes offline and closes the session.
func (l *plantLoop) run(ctx context.Context) error {
	// A solve in hand when the daemon stops ends at its next look at the time (cutShort).
	stopCut := context.AfterFunc(ctx, func() { l.stopping.Store(true) })
	defer stopCut()
	l.sess.start()
	defer func() {
		var offline []byte
		if l.core.active() { // a standby leaves the active daemon's status alone
			var epoch uint64
			if l.ha != nil {
				epoch = l.core.ha.epoch
			}
			offline = l.core.statusPayload(wire.StateOffline, "daemon stopped", epoch, l.clock.Now())
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
			l.step(evTick{dlAlarm: l.decisions.check(l.clock.Now())})
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
			l.step(evControl{ev: ev, connAlive: ev.conn != nil && l.out.alive(ev.conn)})
		case l.held != nil:
			m := *l.held
			l.held = nil
			// A newer valid one waits behind it, with no control event between them that could
			// change the loop's role: the core may pass this one over. Without HA no control event
			// changes the role, and one waiting (the daemon's own status coming back, say) must
			// not keep the older measurement from being passed over or shortened.
			newer := len(l.in.meas) > 0 && (l.ha == nil || len(l.queue) == 0 && len(l.in.control) == 0)
			r := l.core.Step(evMeasure{m: m, newerWaiting: newer}, l.env())
			l.carryOut(r)
			if r.passedOver {
				continue
			}
			return
		default:
			l.step(evIdle{}) // caught up: a claim may be due
			return
		}
	}
}

// env is what the core needs to know of the loop at an event.
func (l *plantLoop) env() loopEnv {
	return loopEnv{now: l.clock.Now(), caughtUp: l.caughtUp(), current: l.out.current()}
}

// step hands the core one event and carries out what it returns.
func (l *plantLoop) step(ev coreEvent) { l.carryOut(l.core.Step(ev, l.env())) }

// carryOut does what the core returned, in order, and goes on with the solve it starts until the
// core has nothing more to start.
func (l *plantLoop) carryOut(r ready) {
	for {
		slotHeld := false
		if r.wait != nil {
			l.emit(r)
			ok := l.slots.acquire(r.wait.by)
			slotHeld = ok
			r = l.core.Step(evSlot{ok: ok}, l.env())
		}
		if r.solve != nil {
			l.emit(r)
			ev := l.solve(r.solve)
			// The slot is a core for the solve: it goes back as soon as the solve ends, not after
			// the publish, the decision record, the metrics and the logs, which wait on the broker,
			// the disk and the logger's lock (held through them, the slots idled the cores while
			// every other loop queued for one).
			if slotHeld {
				l.slots.release()
				slotHeld = false
			}
			r = l.core.Step(ev, l.env())
		}
		if slotHeld {
			l.slots.release() // no solve came of it
		}
		l.emit(r)
		if r.wait == nil && r.solve == nil {
			return
		}
	}
}

// emit carries out r's publications, counts, notes, record and watchdog kick; not its wait or
// solve.
func (l *plantLoop) emit(r ready) {
	for _, o := range r.out {
		if o.rej != nil {
			l.rejectMsg(o.rej)
			continue
		}
		topic := l.topic(o.kind)
		if o.conn != nil {
			l.track(o.kind, l.out.publishOn(o.conn, topic, o.qos, o.retained, o.payload))
		} else {
			l.track(o.kind, l.out.publish(topic, o.qos, o.retained, o.payload))
		}
	}
	l.m.apply(l.cfg.ID, r.metrics)
	l.journal(r.notes)
	if r.observe != nil {
		l.m.step.observe(l.cfg.ID, r.observe)
	}
	if r.finish != nil && l.rec != nil {
		l.rec.finish(r.finish)
	}
	l.show()
	if r.recheck {
		// The records just written may have been dropped.
		l.emit(l.core.Step(evAlarm{dlAlarm: l.decisions.check(l.clock.Now())}, l.env()))
	}
	if r.kick {
		l.kick()
	}
}

// rejectMsg counts a rejection and sends its error message if the error topic is still this
// daemon's, which the fold of everything that arrived during the step decides.
func (l *plantLoop) rejectMsg(rej *wire.Rejection) {
	l.m.rejected.WithLabelValues(l.cfg.ID, rej.Reason).Inc()
	if l.ha != nil {
		l.takeControl()
	}
	var r ready
	b := l.core.errorFor(rej, l.clock.Now(), &r)
	l.journal(r.notes)
	if b != nil {
		l.track("error", l.out.publish(l.topic("error"), 0, false, b))
	}
}

// solve runs the core's solve order on the controller and reports how it ended.
func (l *plantLoop) solve(o *solveOrder) evSolved {
	m := o.m
	if o.adopt != nil {
		l.adopt(o.adopt, o.adoptPeriods)
	}
	if l.rec != nil {
		l.rec.begin(o.actionSeq, m.env.Seq, l.policy.Version, m.meas.Instance())
	}
	l.wasCut.Store(false)
	cut := o.cut
	l.cut.Store(&cut)
	d, err := l.ctl.Step(m.meas, o.solveBy)
	l.cut.Store(nil)
	return evSolved{d: &d, err: err, cut: l.wasCut.Load(), stopping: l.stopping.Load(),
		connAlive: l.ha == nil || l.out.alive(m.conn), dlAlarm: l.decisions.check(l.clock.Now())}
}

// cutShort is the solves' Interrupt (gbd.Settings): the core's rule for the solve in hand
// (cutRule), asked with what only the driver sees: whether a newer measurement waits, and whether
// the daemon is stopping.
func (l *plantLoop) cutShort() bool {
	r := l.cut.Load()
	if r == nil || !r.cut(l.clock.Now(), len(l.in.meas) > 0, l.stopping.Load()) {
		return false
	}
	l.wasCut.Store(true)
	return true
}

// journal writes the core's notes.
func (l *plantLoop) journal(notes []note) {
	for _, n := range notes {
		if ce := l.log.Check(n.level, n.msg); ce != nil {
			ce.Write(n.fields...)
		}
	}
}

// enqueue puts a control event taken out of its lane in the loop's queue, and lets the core fold
// it ahead of its turn.
func (l *plantLoop) enqueue(ev event) {
	l.queue = append(l.queue, ev)
	if l.ha == nil {
		return
	}
	l.core.foresee(ev)
	if l.core.standbyAhead() != l.view.Load().standby {
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

// haCheck lets the core act on the election now (tests drive it by hand).
func (l *plantLoop) haCheck() { l.step(evIdle{}) }

// adopt makes the controller continue from the last plan the previous active daemon published,
// shifted by the periods between that plan's measurement and this one (the core counts them).
func (l *plantLoop) adopt(p *peerAction, periods int) {
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
	// Step shifts once, so shift here for every further period that passed.
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

// swapPolicy runs between steps by construction: the loop is not inside a solve.
func (l *plantLoop) swapPolicy(p LoadedPolicy) {
	old := l.policy.Version
	l.policy = p
	l.ctl.SetPolicy(p.Policy)
	l.m.policyInfo.DeleteLabelValues(l.cfg.ID, old)
	l.m.policyInfo.WithLabelValues(l.cfg.ID, p.Version).Set(1)
	l.step(evPolicy{p: p})
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
