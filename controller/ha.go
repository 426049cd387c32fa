package controller

import (
	"encoding/json"
	"fmt"
	"time"

	"gbdmpc/wire"
)

// Active/standby (configs.HA).
//
// Daemons of an HA group serve the same plants through one broker and agree, per plant, on which
// of them is active by folding the plant's retained status topic. MQTT has no compare-and-swap,
// but a broker delivers the messages of one topic to every subscriber in the same order, so a
// deterministic fold over that order gives every daemon the same answer at the same point of the
// stream:
//
//   - A claim is a status (online or degraded) carrying the claimant's node name, its process's
//     random instance id (member) and an epoch. A claim with a higher epoch than any seen wins;
//     with the same epoch, the smaller node name (then instance) wins, so two daemons claiming
//     at once settle on one; a lower epoch is stale and ignored.
//     A daemon's own status republications are claims of its current epoch.
//   - An offline status from the active node (its Last Will, or its shutdown) leaves the plant
//     without an active daemon until the next claim.
//   - A daemon claims with epoch = highest seen + 1 and becomes active only when the broker hands
//     its own claim back and the fold says it won.
//
// Measurements share the session with the status topic (paho delivers in order, OrderMatters),
// and the plant loop takes both in their order of arrival (events.go), so each measurement is
// tagged with whether this daemon was active at that point of the broker's order, even when the
// loop gets to it only after a long step. Only measurements tagged active are solved and answered. Two daemons therefore
// never answer the same measurement: at each point of the order at most one of them is active.
//
// A standby takes over (claims) when
//   - the active daemon went offline: at once;
//   - an accepted measurement has waited TakeoverPeriods periods without an action from the
//     active daemon (it is connected but not answering: hung, or its solves stall);
//   - no active daemon has been seen for TakeoverPeriods periods since it subscribed (a group
//     starting from nothing).
//
// When the active daemon went offline with a measurement unanswered, the new one answers the newest
// accepted measurement at once if its deadline has not passed: anything the old one published
// reached the broker before its Last Will, so that measurement is nobody else's. (A hung daemon's
// measurements stay its own: it may still answer them.)
//
// Connections: once the broker has given up on a connection (and sent its Last Will), nothing
// published on it can arrive any more, and the session never carries a publish over to a new
// connection (session.go: one paho client per connection, no re-sent store). An action goes out
// on the connection its measurement came in on or not at all (withheld, counted in
// gbdmpc_controller_ha_withheld_total), and never after its measurement's deadline. That is what
// makes the orphan rule above safe even when the old daemon was cut off silently or stopped and
// still believes it is active: whatever it publishes after its Will is lost with its connection.
// On every new connection a daemon counts as active only once the fold has seen its own claim
// again on that connection (the retained status the broker sends on subscribing); until then it
// tags measurements as a standby does and publishes nothing, so a daemon replaced while it was cut
// off never republishes its old claim. If its claim does not come back within a period (a broker
// that lost its retained messages), it claims anew.
//
// Epochs are fencing tokens: every action carries the epoch under which its measurement was
// tagged, and a plant drops an action whose epoch is lower than the highest it has seen.
//
// The new active daemon continues from the plan the old one published last (mpc.PlanDecoder,
// Controller.Adopt), shifted by the periods since, and numbers its actions from takeoverSeqGap
// past the last one it saw. A replaced daemon that was hung still answers the measurements that
// were its own (those before the claim in the broker's order) when it wakes up, at most a mailbox
// and one solve's worth, with its own older numbers; the gap keeps the two series apart, so an
// action seq is never used twice.

// takeoverSeqGap separates a new active daemon's action seqs from the last one it saw (ha.go doc).
// It must exceed what a replaced daemon can still publish: its mailbox plus the solve in hand.
const takeoverSeqGap = 1 << 16

// member identifies a daemon of a group: its configured node name and a random instance id per
// process. Two processes started with the same node name by mistake are still two members, so
// the fold still picks one of them; a restarted daemon is a new member, which does not inherit
// its previous process's claim.
type member struct {
	node, instance string
}

func (m member) String() string {
	if m.instance == "" {
		return m.node
	}
	return m.node + "/" + m.instance
}

// before orders members for ties of the same epoch: by node name, then instance.
func (m member) before(o member) bool {
	if m.node != o.node {
		return m.node < o.node
	}
	return m.instance < o.instance
}

// claim is what the fold reads from one status message.
type claim struct {
	who     member
	epoch   uint64
	offline bool
}

func parseClaim(payload []byte) (claim, bool) {
	var st struct {
		State    string `json:"state"`
		Node     string `json:"node"`
		Instance string `json:"instance"`
		Epoch    uint64 `json:"epoch"`
	}
	if json.Unmarshal(payload, &st) != nil {
		return claim{}, false
	}
	who := member{st.Node, st.Instance}
	switch st.State {
	case wire.StateOffline:
		return claim{who: who, epoch: st.Epoch, offline: true}, true
	case wire.StateOnline, wire.StateDegraded:
		return claim{who: who, epoch: st.Epoch}, true
	}
	return claim{}, false
}

// peerAction is the last action another daemon of the group published for the plant.
type peerAction struct {
	seq, measurementSeq uint64
	fallbacks           int
	plan                json.RawMessage
	who                 member
	received            time.Time
}

// election is one plant's active/standby state in one daemon: plain state of the plant loop, which
// folds into it, in the broker's order, the status messages, peer actions and connection changes
// the session hands it as events (events.go), tags each measurement with it, and asks it whether
// to claim. Nothing else touches it, so it needs no lock.
type election struct {
	self     member
	period   time.Duration
	takeover int // periods

	leader    member // the winning claim's member (node "": none seen)
	epoch     uint64 // its epoch, the highest seen
	live      bool   // the leader has not gone offline since its claim
	downAt    time.Time
	downNode  member
	startedAt time.Time // first subscription: the clock for "no active daemon seen"
	// our outstanding claim (0: none) and when it was made
	claimEpoch uint64
	claimAt    time.Time
	// peer is the last action seen from another node (nil: none).
	peer *peerAction
	// the oldest accepted measurement that no action answered yet (pendSeq 0: none)
	pendSeq    uint64
	pendAt     time.Time
	pendLater  int       // measurements accepted after it, at least half a period apart
	pendLastAt time.Time // when the last one counted (or the pending one) arrived
	lastAccSeq uint64
	lastAccAt  time.Time
	// orphan is the newest measurement the previous active daemon left unanswered when it went
	// offline, for this node to answer on taking over (0: none).
	orphan uint64
	// firstAnswered is the first measurement this node answered in its current term as active
	// (0: none yet); an action of another node for it or a later one means two actives. term is
	// the epoch it belongs to.
	firstAnswered uint64
	term          uint64
	// curGen is the session's current connection; seenOn the connection on which the fold last
	// saw this node's claim hold (active needs both equal); connAt is when curGen began.
	curGen, seenOn uint64
	connAt         time.Time
}

func newElection(self member, period time.Duration, takeover int) *election {
	return &election{self: self, period: period, takeover: takeover}
}

// started records the first subscription.
func (e *election) started(now time.Time) {
	if e.startedAt.IsZero() {
		e.startedAt = now
	}
}

// active reports whether this daemon is the plant's active one at this point of the stream: this
// node won the last claim, has not gone offline since, and its claim has been
// seen on the connection in use.
func (e *election) active() bool {
	return e.live && e.leader == e.self && e.seenOn == e.curGen
}

// connected records a new connection (gen increases with each): the node is not active on it
// until observe sees its claim there.
func (e *election) connected(gen uint64, now time.Time) {
	if gen > e.curGen {
		e.curGen, e.connAt = gen, now
	}
}

// observe folds one status message, received on connection gen, and reports whether this node
// was and is active.
func (e *election) observe(c claim, gen uint64, now time.Time) (was, is bool) {
	was = e.active()
	switch {
	case c.who.node == "":
		// A daemon without HA publishing for this plant takes no part in the election.
	case c.offline:
		if c.who == e.leader && e.live {
			e.live, e.downAt, e.downNode = false, now, c.who
		}
	case c.epoch > e.epoch,
		c.epoch == e.epoch && (e.leader.node == "" || c.who.before(e.leader)):
		if c.who != e.leader || !e.live {
			if c.who == e.self && !e.live && e.leader.node != "" && e.pendSeq != 0 {
				// This node takes over from one that went offline with a measurement unanswered.
				// Whatever it published reached the broker before its Last Will (one connection,
				// in order), so the newest measurement is nobody's now: this node may answer it.
				e.orphan = e.lastAccSeq
			}
			// A new term: measurements wait for this leader's answers from now on.
			e.pendSeq, e.pendLater = 0, 0
		}
		e.leader, e.epoch, e.live = c.who, c.epoch, true
	case c.epoch == e.epoch && c.who == e.leader:
		e.live = true // the leader re-announcing itself (after a reconnection, say)
	}
	if e.live && e.leader == e.self && !c.offline && c.who == e.self {
		e.seenOn = max(e.seenOn, gen) // our claim holds, as seen on this connection
	}
	if e.claimEpoch != 0 && (e.active() || e.epoch >= e.claimEpoch) {
		e.claimEpoch = 0 // decided: won, or someone else's claim superseded ours
	}
	if e.active() && e.term != e.epoch {
		// A new term: conflicts count from this term's first answer only, whatever a late step
		// of an earlier term may have noted.
		e.term, e.firstAnswered = e.epoch, 0
	}
	return was, e.active()
}

// heal reports whether a status message just folded leaves the retained status wrong for an
// active daemon: an offline, or another node's (stale or losing) claim, is the last retained
// message, so the active daemon republishes its own.
func (e *election) heal(c claim) bool {
	return e.active() && (c.offline || c.who != e.self)
}

// answered notes a measurement this node answered, tagged active under epoch. Only an answer of
// the current term counts: a step that finished after the node lost the plant (and its late action
// withheld or lost) must not make the next term see conflicts.
func (e *election) answered(seq, epoch uint64) {
	if e.active() && epoch == e.epoch && e.term == epoch && e.firstAnswered == 0 {
		e.firstAnswered = seq
	}
}

// observeAction folds an action from the action topic. It reports a conflict: another node
// answered a measurement at or after the first one this node answered in its current term (two
// actives; it must not happen, and is counted if it does). The previous active daemon's answers
// to measurements that reached the broker before this node's claim are not conflicts: they were
// its to answer.
func (e *election) observeAction(a *wire.Action, now time.Time) (conflict bool) {
	who := member{a.Node, a.Instance}
	if who == e.self {
		return false
	}
	if e.peer == nil || a.Seq > e.peer.seq {
		e.peer = &peerAction{seq: a.Seq, measurementSeq: a.MeasurementSeq, fallbacks: a.Fallbacks,
			plan: append(json.RawMessage(nil), a.Plan...), who: who, received: now}
	}
	if e.pendSeq != 0 && a.MeasurementSeq >= e.pendSeq {
		e.pendSeq, e.pendLater = 0, 0
		if e.lastAccSeq > a.MeasurementSeq {
			e.pendSeq, e.pendAt, e.pendLastAt = e.lastAccSeq, e.lastAccAt, e.lastAccAt
		}
	}
	return e.active() && e.firstAnswered != 0 && a.MeasurementSeq >= e.firstAnswered
}

// accepted notes a measurement a standby accepted (valid, fresh, in order) but does not answer.
func (e *election) accepted(seq uint64, at time.Time) {
	e.lastAccSeq, e.lastAccAt = seq, at
	if e.leader.node == "" || !e.live {
		return // nobody to wait for: shouldClaim handles that case
	}
	if e.peer != nil && seq <= e.peer.measurementSeq {
		return // answered already (the broker orders each topic, not the two together)
	}
	switch {
	case e.pendSeq == 0:
		e.pendSeq, e.pendAt, e.pendLater, e.pendLastAt = seq, at, 0, at
	case at.Sub(e.pendLastAt) >= e.period/2:
		// Only measurements at least half a period apart stand for periods gone by: a burst (a plant
		// catching up after a reconnect) is answered by the active daemon in one go, and is no
		// sign that it is gone.
		e.pendLater++
		e.pendLastAt = at
	}
}

// shouldClaim says why this standby should claim now ("" when it should not) and, if it should,
// records the claim and returns its epoch.
func (e *election) shouldClaim(now time.Time) (reason string, epoch uint64) {
	if e.active() || e.startedAt.IsZero() {
		return "", 0
	}
	wait := time.Duration(e.takeover) * e.period
	if e.claimEpoch != 0 {
		// Our claim is on its way. If the broker never hands it back (lost with a connection),
		// try again after a take-over bound.
		if now.Sub(e.claimAt) < wait {
			return "", 0
		}
		e.claimEpoch = 0
	}
	switch {
	case e.leader.node == "":
		if now.Sub(e.startedAt) >= wait {
			reason = fmt.Sprintf("no active daemon seen in %d periods", e.takeover)
		}
	case e.leader == e.self && e.live && e.seenOn != e.curGen:
		if now.Sub(e.connAt) >= e.period {
			reason = "this daemon's claim did not come back on its new connection"
		}
	case !e.live:
		reason = fmt.Sprintf("active daemon %s went offline", e.downNode)
	case e.pendSeq != 0 && (now.Sub(e.pendAt) >= wait || e.pendLater >= e.takeover):
		// Measurements come once a period, so takeover later ones (counted only when half a
		// period apart) mean the same wait as the clock does, without depending on when the
		// loop's ticker fires.
		reason = fmt.Sprintf("measurement %d unanswered by %s for %v (%d later measurements)", e.pendSeq, e.leader,
			now.Sub(e.pendAt).Round(time.Millisecond), e.pendLater)
	}
	if reason == "" {
		return "", 0
	}
	e.claimEpoch, e.claimAt = e.epoch+1, now
	return reason, e.claimEpoch
}

// takeOver is called once by the plant loop when this node became active: it hands over the last
// peer action (nil: none) and the orphaned measurement's seq (0: none), and forgets the standby's
// bookkeeping.
func (e *election) takeOver() (p *peerAction, orphan uint64) {
	p, orphan = e.peer, e.orphan
	e.pendSeq, e.pendLater, e.orphan = 0, 0, 0
	return p, orphan
}

// leaderNode is the member the fold last saw win (node "": none), and whether it is up.
func (e *election) leaderNode() (member, bool) {
	return e.leader, e.live
}
