package controller

import (
	"sync"
	"time"

	"gbdmpc/mpc"
)

// inbound is one measurement that passed every check on arrival (gate.go), with the time it
// arrived: the step's deadline counts from the receipt, not from when the plant loop got round to
// it.
type inbound struct {
	meas     mpc.Measurement
	env      envelope
	received time.Time
	// standby: the message arrived while another daemon of an HA group was the plant's active
	// one (ha.go), so this daemon only keeps it in case it takes over.
	standby bool
	// retake: a measurement accepted as a standby, answered after taking over (never queued).
	retake bool
	// epoch is the election's epoch when it arrived tagged active (0 without HA): the action's
	// fencing token.
	epoch uint64
	// conn is the connection it arrived on; with HA its action goes out on that one or not at all.
	conn *mqttConn
}

// mailbox is the bounded hand-over from the MQTT client's callback to a plant loop. Put never
// blocks, so a slow solve can never stall the MQTT client (and with it keep-alives and every other
// plant's messages). Only valid measurements enter, each with a greater seq than the one before,
// so when full the oldest is dropped: a newer valid measurement of the same plant supersedes it.
type mailbox struct {
	mu      sync.Mutex
	buf     []inbound
	cap     int
	dropped uint64
	ready   chan struct{} // holds a token while buf is non-empty (may be stale: Take re-checks)
}

func newMailbox(capacity int) *mailbox {
	if capacity < 1 {
		capacity = 1
	}
	return &mailbox{cap: capacity, ready: make(chan struct{}, 1)}
}

// Put adds msg and reports whether an older message had to be dropped to make room.
func (m *mailbox) Put(msg inbound) (dropped bool) {
	m.mu.Lock()
	if len(m.buf) == m.cap {
		copy(m.buf, m.buf[1:])
		m.buf = m.buf[:len(m.buf)-1]
		m.dropped++
		dropped = true
	}
	m.buf = append(m.buf, msg)
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
	return dropped
}

// Ready is signalled when a message may be waiting.
func (m *mailbox) Ready() <-chan struct{} { return m.ready }

// Take removes the oldest message.
func (m *mailbox) Take() (inbound, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.buf) == 0 {
		return inbound{}, false
	}
	msg := m.buf[0]
	copy(m.buf, m.buf[1:])
	m.buf[len(m.buf)-1] = inbound{}
	m.buf = m.buf[:len(m.buf)-1]
	if len(m.buf) > 0 {
		select {
		case m.ready <- struct{}{}:
		default:
		}
	}
	return msg, true
}

// Dropped is how many messages were pushed out by newer ones.
func (m *mailbox) Dropped() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dropped
}
