package controller

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"gbdmpc/wire"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func on(node string, epoch uint64) claim { return claim{who: member{node: node}, epoch: epoch} }
func off(node string, epoch uint64) claim {
	return claim{who: member{node: node}, epoch: epoch, offline: true}
}
func node(n string) member { return member{node: n} }

// TestElectionFold walks the fold through the cases of ha.go one message at a time.
// afterA is me's election (takeover after 2 periods unanswered), started at t0, where a claimed
// term 1 at t0.
func afterA(me member, period time.Duration, t0 time.Time) *election {
	e := newElection(me, period, 2)
	e.started(t0)
	e.observe(on("a", 1), 0, t0)
	return e
}

func TestElectionFold(t *testing.T) {
	e := newElection(node("b"), time.Second, 2)
	steps := []struct {
		name   string
		c      claim
		leader string
		epoch  uint64
		live   bool
		active bool
	}{
		{"a claims epoch 1", on("a", 1), "a", 1, true, false},
		{"b claims the same epoch: a's name is smaller, a stays", on("b", 1), "a", 1, true, false},
		{"a stale lower epoch is ignored", on("c", 0), "a", 1, true, false},
		{"an offline of another node changes nothing", off("c", 0), "a", 1, true, false},
		{"a daemon without HA takes no part", on("", 7), "a", 1, true, false},
		{"a's Last Will: no active daemon", off("a", 0), "a", 1, false, false},
		{"a re-announces its epoch: live again", on("a", 1), "a", 1, true, false},
		{"b claims epoch 2 and wins", on("b", 2), "b", 2, true, true},
		{"a late claim of epoch 2 by a: smaller name, a wins", on("a", 2), "a", 2, true, false},
		{"b claims epoch 3", on("b", 3), "b", 3, true, true},
		{"a's late epoch-2 republish is stale", on("a", 2), "b", 3, true, true},
		{"b's own shutdown offline", off("b", 3), "b", 3, false, false},
	}
	for _, s := range steps {
		e.observe(s.c, 0, t0)
		leader, live := e.leaderNode()
		if leader.node != s.leader || e.epoch != s.epoch || live != s.live || e.active() != s.active {
			t.Fatalf("%s: leader %q epoch %d live %v active %v, want %q %d %v %v",
				s.name, leader, e.epoch, live, e.active(), s.leader, s.epoch, s.live, s.active)
		}
	}
}

// TestElectionAgreesAcrossDaemons: daemons folding the same stream (as one broker delivers it to
// all of them) agree on the leader at every point, so at most one of them is active at any point,
// and so at most one answers any measurement between two status messages.
func TestElectionAgreesAcrossDaemons(t *testing.T) {
	// Two processes were given the same node name by mistake: they are still two members.
	nodes := []member{{"a", "1"}, {"a", "2"}, {"b", "3"}}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 9))
		views := make([]*election, len(nodes))
		for i, n := range nodes {
			views[i] = newElection(n, time.Second, 2)
		}
		maxEpoch := uint64(0)
		for k := range 60 {
			n := nodes[rng.IntN(len(nodes))]
			var c claim
			switch r := rng.IntN(10); {
			case r < 2:
				c = claim{who: n, epoch: uint64(rng.IntN(int(maxEpoch) + 1)), offline: true}
			case r < 7: // a claim as the protocol makes it: the highest epoch seen + 1
				maxEpoch++
				c = claim{who: n, epoch: maxEpoch}
			default: // republications, stale or current
				c = claim{who: n, epoch: uint64(rng.IntN(int(maxEpoch) + 1))}
			}
			actives := 0
			var leader0 member
			var live0 bool
			for i, v := range views {
				v.observe(c, 0, t0)
				leader, live := v.leaderNode()
				if i == 0 {
					leader0, live0 = leader, live
				} else if leader != leader0 || live != live0 {
					t.Fatalf("seed %d message %d (%+v): %v sees leader %v live %v, %v sees %v %v",
						seed, k, c, nodes[i], leader, live, nodes[0], leader0, live0)
				}
				if v.active() {
					actives++
				}
			}
			if actives > 1 {
				t.Fatalf("seed %d message %d: %d daemons active", seed, k, actives)
			}
		}
	}
}

// TestElectionSameNodeName: two processes configured with the same node name (a copied config)
// are told apart by their instance ids, so only one of them is active; and a restarted daemon does
// not inherit the claim its previous process left retained.
func TestElectionSameNodeName(t *testing.T) {
	a1, a2 := member{"a", "p1"}, member{"a", "p2"}
	e1, e2 := newElection(a1, time.Second, 2), newElection(a2, time.Second, 2)
	for _, c := range []claim{{who: a2, epoch: 1}, {who: a1, epoch: 1}} {
		e1.observe(c, 0, t0)
		e2.observe(c, 0, t0)
	}
	if !e1.active() || e2.active() {
		t.Fatalf("same node name, same epoch: active %v and %v, want only instance p1 (smaller)", e1.active(), e2.active())
	}
	// p2's losing claim may be what the broker retains: p1 republishes, p2 does not.
	if !e1.heal(claim{who: a2, epoch: 1}) || e2.heal(claim{who: a2, epoch: 1}) {
		t.Error("only the active instance should repair the retained status")
	}

	// A restart: the old process's claim is retained; the new process is a standby until the
	// old one's Last Will frees the plant, then claims.
	restarted := newElection(member{"a", "p3"}, time.Second, 2)
	restarted.started(t0)
	restarted.observe(claim{who: a1, epoch: 4}, 0, t0)
	if restarted.active() {
		t.Fatal("the restarted process took over its previous process's claim")
	}
	restarted.observe(claim{who: a1, offline: true}, 0, t0)
	if r, epoch := restarted.shouldClaim(t0); r == "" || epoch != 5 {
		t.Fatalf("no claim after the old process's Last Will (%q, %d)", r, epoch)
	}
	// An action of the other process with the same node name is not this one's.
	if e1.observeAction(&wire.Action{Seq: 1, MeasurementSeq: 1, Node: "a", Instance: "p1"}, t0) {
		t.Error("own action counted as a conflict")
	}
	e1.answered(2, 1)
	if !e1.observeAction(&wire.Action{Seq: 9, MeasurementSeq: 3, Node: "a", Instance: "p2"}, t0) {
		t.Error("the other same-name process's action not counted as a conflict")
	}
}

// TestElectionClaims: when a standby claims, with which epoch, and when it does not.
func TestElectionClaims(t *testing.T) {
	const period = time.Second
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	t.Run("nobody active since start", func(t *testing.T) {
		e := newElection(node("a"), period, 2)
		if r, _ := e.shouldClaim(at(10 * period)); r != "" {
			t.Fatalf("claimed before subscribing: %s", r)
		}
		e.started(at(0))
		if r, _ := e.shouldClaim(at(2*period - time.Millisecond)); r != "" {
			t.Fatalf("claimed before the take-over bound: %s", r)
		}
		r, epoch := e.shouldClaim(at(2 * period))
		if r == "" || epoch != 1 {
			t.Fatalf("no claim at the bound (%q, epoch %d)", r, epoch)
		}
		if r, _ := e.shouldClaim(at(2*period + 1)); r != "" {
			t.Fatal("claimed again while the first claim is on its way")
		}
		// The claim was lost with a connection: try again one bound later, same epoch.
		if r, epoch := e.shouldClaim(at(4 * period)); r == "" || epoch != 1 {
			t.Fatalf("no second claim after the first was lost (%q, %d)", r, epoch)
		}
		e.observe(on("a", 1), 0, at(4*period))
		if !e.active() {
			t.Fatal("not active after its claim came back")
		}
		if r, _ := e.shouldClaim(at(10 * period)); r != "" {
			t.Fatal("an active daemon claimed")
		}
	})

	t.Run("the active one goes offline", func(t *testing.T) {
		e := newElection(node("b"), period, 3)
		e.started(at(0))
		e.observe(on("a", 4), 0, at(0))
		if r, _ := e.shouldClaim(at(100 * period)); r != "" {
			t.Fatalf("claimed while a is up and nothing waits: %s", r)
		}
		e.observe(off("a", 0), 0, at(100*period))
		r, epoch := e.shouldClaim(at(100 * period))
		if !strings.Contains(r, "a went offline") || epoch != 5 {
			t.Fatalf("claim %q epoch %d, want an immediate claim of epoch 5", r, epoch)
		}
	})

	t.Run("the active one does not answer", func(t *testing.T) {
		e := afterA(node("b"), period, at(0))
		e.accepted(1, at(0))
		e.observeAction(&wire.Action{Seq: 10, MeasurementSeq: 1, Node: "a"}, at(100*time.Millisecond))
		e.accepted(2, at(period))
		e.accepted(3, at(2*period)) // 2 is still unanswered: the clock runs from 2's receipt
		if r, _ := e.shouldClaim(at(3*period - time.Millisecond)); r != "" {
			t.Fatalf("claimed early: %s", r)
		}
		// The answer to 2 arrives; 3 is now the oldest unanswered.
		e.observeAction(&wire.Action{Seq: 11, MeasurementSeq: 2, Node: "a"}, at(3*period-time.Millisecond))
		if r, _ := e.shouldClaim(at(4*period - time.Millisecond)); r != "" {
			t.Fatalf("claimed although only 3 waits, for less than 2 periods: %s", r)
		}
		r, epoch := e.shouldClaim(at(4 * period))
		if !strings.Contains(r, "measurement 3 unanswered by a") || epoch != 2 {
			t.Fatalf("claim %q epoch %d", r, epoch)
		}
	})

	t.Run("a burst is not periods gone by", func(t *testing.T) {
		e := afterA(node("b"), period, at(0))
		for i := range 6 { // a plant catching up: six measurements within 5 ms
			e.accepted(uint64(1+i), at(time.Duration(i)*time.Millisecond))
		}
		if r, _ := e.shouldClaim(at(10 * time.Millisecond)); r != "" {
			t.Fatalf("claimed on a burst: %s", r)
		}
		// Later measurements a period apart do count: two of them are the bound.
		e.accepted(7, at(period))
		if r, _ := e.shouldClaim(at(period)); r != "" {
			t.Fatalf("claimed after one later period: %s", r)
		}
		e.accepted(8, at(2*period-time.Millisecond))
		if r, _ := e.shouldClaim(at(2*period - time.Millisecond)); !strings.Contains(r, "2 later measurements") {
			t.Fatalf("claim %q after two later periods, want one for 2 later measurements", r)
		}
	})

	t.Run("an answer that overtakes its measurement", func(t *testing.T) {
		e := afterA(node("b"), period, at(0))
		e.observeAction(&wire.Action{Seq: 10, MeasurementSeq: 5, Node: "a"}, at(0))
		e.accepted(5, at(0))
		if r, _ := e.shouldClaim(at(10 * period)); r != "" {
			t.Fatalf("claimed for an answered measurement: %s", r)
		}
	})

	t.Run("a new term restarts the wait", func(t *testing.T) {
		e := afterA(node("c"), period, at(0))
		e.accepted(1, at(0))
		e.observe(on("b", 2), 0, at(period)) // b took over: it owes nothing for 1
		if r, _ := e.shouldClaim(at(10 * period)); r != "" {
			t.Fatalf("claimed for a measurement of the previous term: %s", r)
		}
	})
}

// TestElectionOrphan: a measurement the active daemon left unanswered when it went offline is the
// new active one's to answer; one it answered before its Last Will, or one a hung (still connected)
// daemon holds, is not.
func TestElectionOrphan(t *testing.T) {
	setup := func() *election {
		e := afterA(node("b"), time.Second, t0)
		e.accepted(4, t0)
		e.observeAction(&wire.Action{Seq: 10, MeasurementSeq: 4, Node: "a"}, t0)
		e.accepted(5, t0.Add(time.Second))
		return e
	}
	e := setup()
	e.observe(off("a", 0), 0, t0.Add(time.Second))
	_, epoch := e.shouldClaim(t0.Add(time.Second))
	e.observe(on("b", epoch), 0, t0.Add(time.Second))
	if _, orphan := e.takeOver(); orphan != 5 {
		t.Errorf("orphan %d after a went offline with 5 unanswered, want 5", orphan)
	}

	e = setup()
	e.observeAction(&wire.Action{Seq: 11, MeasurementSeq: 5, Node: "a"}, t0.Add(time.Second)) // before its Will
	e.observe(off("a", 0), 0, t0.Add(time.Second))
	_, epoch = e.shouldClaim(t0.Add(time.Second))
	e.observe(on("b", epoch), 0, t0.Add(time.Second))
	if _, orphan := e.takeOver(); orphan != 0 {
		t.Errorf("orphan %d although a answered 5 before going offline", orphan)
	}

	e = setup()
	r, epoch := e.shouldClaim(t0.Add(4 * time.Second)) // a is up but silent: hung
	if r == "" {
		t.Fatal("no claim against a hung daemon")
	}
	e.observe(on("b", epoch), 0, t0.Add(4*time.Second))
	if _, orphan := e.takeOver(); orphan != 0 {
		t.Errorf("orphan %d taken from a hung daemon that may still answer it", orphan)
	}
}

// TestElectionConflicts: the previous active daemon's late answers to measurements before the
// take-over are its to give; an answer to a measurement this daemon answered is a conflict.
func TestElectionConflicts(t *testing.T) {
	e := afterA(node("b"), time.Second, t0)
	e.observe(on("b", 2), 0, t0)
	e.answered(7, 2)
	if e.observeAction(&wire.Action{Seq: 20, MeasurementSeq: 6, Node: "a"}, t0) {
		t.Error("a's late answer to measurement 6 (before b's first, 7) counted as a conflict")
	}
	if e.observeAction(&wire.Action{Seq: 30, MeasurementSeq: 7, Node: "b"}, t0) {
		t.Error("b's own action counted")
	}
	if !e.observeAction(&wire.Action{Seq: 21, MeasurementSeq: 8, Node: "a"}, t0) {
		t.Error("a's answer to measurement 8 while b is active not counted")
	}
	e.observe(on("a", 3), 0, t0) // b steps down; its term's record goes
	if e.observeAction(&wire.Action{Seq: 22, MeasurementSeq: 9, Node: "a"}, t0) {
		t.Error("a conflict counted while standby")
	}
	if p, _ := e.takeOver(); p == nil || p.seq != 22 || p.who.node != "a" {
		t.Errorf("last peer action %+v, want a's seq 22", p)
	}
}

// TestConnectionFailureLoggedOnce: paho reports a failed dial twice per attempt, the second time
// prefixed "network Error : "; the session logs a reason once at error level and its repeats at
// debug, so a broker that stays away does not flood the log.
func TestConnectionFailureLoggedOnce(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	s := &session{sessionConfig: sessionConfig{plant: "p1", log: zap.New(core)}}
	err := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	for range 3 {
		s.onNotification(nil, mqtt.ConnectionNotificationFailed{Reason: err})
		s.onNotification(nil, mqtt.ConnectionNotificationFailed{Reason: errors.New("network Error : " + err.Error())})
	}
	if n := logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 1 {
		t.Errorf("%d error lines for one repeated reason, want 1", n)
	}
	s.onNotification(nil, mqtt.ConnectionNotificationFailed{Reason: errors.New("not authorized")})
	if n := logs.FilterLevelExact(zapcore.ErrorLevel).Len(); n != 2 {
		t.Errorf("a new reason is not logged at error level (%d error lines)", n)
	}
}

// TestElectionConfirmsOnEachConnection: after a reconnection a daemon is not active until its own
// claim comes back on the new connection (so a daemon replaced while it was cut off never acts or
// republishes on the strength of its old claim); if it does not come back within a period, the
// daemon claims anew.
func TestElectionConfirmsOnEachConnection(t *testing.T) {
	const period = time.Second
	e := newElection(node("a"), period, 2)
	e.started(t0)
	e.connected(1, t0)
	e.observe(on("a", 1), 1, t0)
	if !e.active() {
		t.Fatal("a's own claim on connection 1 did not make it active")
	}
	e.connected(2, t0.Add(time.Second))
	if active, epoch := e.active(), e.epoch; active || epoch != 1 {
		t.Fatalf("on a new connection before its claim came back: active %v epoch %d, want standby at epoch 1", active, epoch)
	}
	if e.heal(claim{who: node("b"), epoch: 1}) {
		t.Error("an unconfirmed daemon would republish its claim")
	}
	e.observe(on("a", 1), 2, t0.Add(time.Second))
	if !e.active() {
		t.Fatal("a's retained claim seen on connection 2 did not make it active again")
	}

	// Replaced while cut off: the retained status on the new connection is b's.
	e.connected(3, t0.Add(2*time.Second))
	e.observe(on("b", 2), 3, t0.Add(2*time.Second))
	if e.active() {
		t.Fatal("a active after b's higher claim")
	}

	// No retained status at all (a broker restarted without persistence): claim after a period.
	f := newElection(node("a"), period, 2)
	f.started(t0)
	f.connected(1, t0)
	f.observe(on("a", 4), 1, t0)
	f.connected(2, t0.Add(time.Second))
	if r, _ := f.shouldClaim(t0.Add(time.Second + period/2)); r != "" {
		t.Errorf("claimed %q before a period passed on the new connection", r)
	}
	if r, epoch := f.shouldClaim(t0.Add(2 * time.Second)); r == "" || epoch != 5 {
		t.Errorf("no claim (%q, %d) after its claim did not come back for a period", r, epoch)
	}
}

// TestElectionLateAnswerIsNoConflict (issue 19, item 6): a daemon that answers late, after it lost
// the plant, must not leave a record that makes its next term count the other daemon's honest
// actions as conflicts.
func TestElectionLateAnswerIsNoConflict(t *testing.T) {
	e := afterA(node("a"), time.Second, t0)
	e.answered(3, 1)
	e.observe(on("b", 2), 0, t0) // b takes over while a hangs
	e.answered(5, 1)             // a's step for measurement 5 ends after that
	e.observe(off("b", 2), 0, t0)
	e.observe(on("a", 3), 0, t0) // a claims again
	if !e.active() {
		t.Fatal("a not active after its claim")
	}
	if e.observeAction(&wire.Action{Seq: 40, MeasurementSeq: 6, Node: "b"}, t0) {
		t.Error("b's action for 6, from its own term, counted as a conflict")
	}
	e.answered(8, 1) // a stale epoch: not this term's
	if e.observeAction(&wire.Action{Seq: 41, MeasurementSeq: 7, Node: "b"}, t0) {
		t.Error("an answer of an earlier term set the conflict mark")
	}
	e.answered(8, 3)
	if !e.observeAction(&wire.Action{Seq: 42, MeasurementSeq: 9, Node: "b"}, t0) {
		t.Error("b answering measurement 9 after a's first answer (8) in its term not counted")
	}
}
