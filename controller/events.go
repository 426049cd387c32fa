package controller

import (
	"sync/atomic"
	"time"

	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// What arrives for a plant reaches its loop as events, through two lanes (lanes below), and the
// loop takes them in the order they arrived. The session's callbacks only judge, number and hand
// over: they read and write no plant state and take no lock, so the election (ha.go), the plant's
// status and everything the loop decides are plain state of the loop's goroutine.
//
//   - Valid measurements (judged on arrival, gate.go) go into a bounded lane: when it is full the
//     oldest waiting measurement gives way, and the callback never waits, so a solve can never
//     stall the MQTT client and junk never displaces a valid measurement.
//   - Everything else — a connection made, the first subscription, a status message (a claim, or a
//     stale offline to heal), another daemon's action — goes into a lane that never drops: the
//     callback waits for room (there is room for far more than a solve's worth of them), because
//     one lost claim could split the election.
//
// Order across the two lanes: every event gets an arrival number from one counter as it is handed
// over. A measurement carries the number of its arrival, so the loop can tag it with the election
// as it stood at that point of the broker's order (ha.go), even when it folds the status messages
// only after a solve. The loop keeps at most one measurement in hand and merges by number
// (plantLoop.work): before it folds a control event it looks for an earlier measurement, and
// before it steps on a measurement it folds every earlier control event. Both are visible to it
// by then, because the message callback hands over the events of one connection one after the
// other, and a connection's connect event is handed over before it subscribes.

// inbound is one measurement that passed every check on arrival (gate.go), with the time it
// arrived: the step's deadline counts from the receipt, not from when the plant loop got round to
// it.
type inbound struct {
	meas     mpc.Measurement
	env      wire.Envelope
	received time.Time
	// n is its arrival number (see above).
	n uint64
	// standby: the message arrived while another daemon of an HA group was the plant's active
	// one (ha.go), so this daemon only keeps it in case it takes over. The loop sets it.
	standby bool
	// retake: a measurement accepted as a standby, answered after taking over (never queued).
	retake bool
	// epoch is the election's epoch when it arrived tagged active (0 without HA): the action's
	// fencing token. The loop sets it.
	epoch uint64
	// conn is the connection it arrived on; with HA its action goes out on that one or not at all.
	conn *mqttConn
	// solveBy, when set, ends its solve earlier than its deadline would, to leave a newer
	// measurement waiting behind it the time of a recent solve (plantLoop.passOver). The loop sets it.
	solveBy time.Time
}

type eventKind uint8

const (
	evConnected  eventKind = iota + 1 // a connection (conn) was made; it subscribes next
	evSubscribed                      // the session's first subscription succeeded
	evStatus                          // a message on the plant's status topic (claim), on conn
	evAction                          // an action on the plant's action topic (HA only)
)

// event is a control event for the plant loop.
type event struct {
	n      uint64
	kind   eventKind
	at     time.Time // when it arrived, on the daemon's clock
	conn   *mqttConn
	claim  claim
	action *wire.Action
}

// controlRoom is the control lane's capacity: status messages come a few per claim and actions
// one per period, so a solve never comes near it.
const controlRoom = 1024

// lanes hands a plant's arrivals from the session's callbacks to its loop.
type lanes struct {
	arrivals atomic.Uint64
	control  chan event
	meas     chan inbound
	// done ends a wait for room in the control lane (the loop has stopped).
	done <-chan struct{}
}

func newLanes(mailbox int, done <-chan struct{}) *lanes {
	return &lanes{control: make(chan event, controlRoom), meas: make(chan inbound, max(mailbox, 1)), done: done}
}

// post hands a control event to the loop, waiting for room rather than dropping it.
func (ln *lanes) post(ev event) {
	ev.n = ln.arrivals.Add(1)
	select {
	case ln.control <- ev:
	case <-ln.done:
	}
}

// deliver hands a valid measurement to the loop without waiting, and reports whether the oldest
// waiting one had to give way. Only the session's message callback delivers, so after one
// measurement has been taken out there is room.
func (ln *lanes) deliver(m inbound) (dropped bool) {
	m.n = ln.arrivals.Add(1)
	for {
		select {
		case ln.meas <- m:
			return dropped
		default:
		}
		select {
		case <-ln.meas:
			dropped = true
		default: // the loop took one meanwhile
		}
	}
}
