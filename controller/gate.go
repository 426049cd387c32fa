package controller

import (
	"encoding/json"
	"time"

	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// gate judges every message on a plant's measurement topic the moment it arrives, in the MQTT
// session's message callback, before anything is queued: envelope, sequence, age and the family's
// own checks (judge). A rejection is counted and answered on the error topic there, under a
// per-plant rate limit; only valid measurements go on to the plant loop's measurement lane (events.go), so junk can
// never push a valid measurement out of it.
//
// Why in the callback, and without a lock: judging is pure and takes microseconds (one pass over
// the bytes, then the family's one decode), so it keeps pace with anything the broker can deliver.
// Handing raw payloads to another goroutine first would need a queue that either blocks paho's
// router (which paho forbids) or drops, and a drop could be the valid measurement. The two pieces
// of state the gate keeps — the last accepted seq and the rate limiter — are touched only by the
// session's message callback. paho runs that callback on one goroutine per connection (OrderMatters),
// and the session makes a new client for each connection only after the previous one's goroutines
// have stopped (session.go), so the callbacks never overlap and the state needs no mutex. Error
// messages are handed to the session's error publisher through a bounded channel (paho must not
// publish from its callback); if that channel is full the message counts as suppressed.
//
// An HA standby judges and keeps the seq exactly as the active daemon does, but publishes no error
// messages: the plant's error topic is the active daemon's. Which one it is, the callback reads
// from the role the plant loop last showed (plantView), the one piece of loop state it reads.
type gate struct {
	plant  string
	family mpc.Family
	cfg    *configs.Plant // max_age, max_payload_bytes and the effective deadline (expiry.go)
	m      *metrics
	log    *zap.Logger
	// send hands an encoded error message to the publisher; it must not block.
	send func([]byte) bool

	// owned by the session's message callback
	lastSeq    uint64
	haveSeq    bool
	limit      tokenBucket
	suppressed uint64 // error messages withheld since the last one sent
}

// newGate is the gate of plant p (defaults applied).
func newGate(p *configs.Plant, family mpc.Family, m *metrics, log *zap.Logger) *gate {
	return &gate{plant: p.ID, family: family, cfg: p, m: m, log: log,
		limit: tokenBucket{rate: p.ErrorRate, burst: float64(p.ErrorBurst)}}
}

// judge runs every check of the contract on a payload, cheapest first, and decodes the family's
// fields last. It changes nothing.
func (g *gate) judge(payload []byte, now time.Time) (mpc.Measurement, wire.Envelope, *wire.Rejection) {
	// The size first, before a byte is parsed: scanning and decoding cost several times the
	// payload in memory, so an oversized one must not get that far.
	if len(payload) > g.cfg.MaxPayloadBytes {
		return nil, wire.Envelope{}, wire.Reject(wire.ReasonTooLarge, nil, "payload is %d bytes, more than max_payload_bytes %d", len(payload), g.cfg.MaxPayloadBytes)
	}
	env, rej := wire.DecodeEnvelope(payload)
	if rej != nil {
		return nil, env, rej
	}
	seq := env.Seq
	if g.haveSeq && seq <= g.lastSeq {
		return nil, env, wire.Reject(wire.ReasonSeq, &seq, "seq %d is not greater than the last accepted %d", seq, g.lastSeq)
	}
	if rej := judgeArrival(g.cfg, env.TSms, seq, now); rej != nil {
		return nil, env, rej
	}
	m, err := g.family.DecodeMeasurement(payload)
	if err != nil {
		return nil, env, wire.Reject(wire.FamilyReason(err), &seq, "%v", err)
	}
	return m, env, nil
}

// accept makes seq the last accepted one.
func (g *gate) accept(seq uint64) { g.lastSeq, g.haveSeq = seq, true }

// refuse counts a rejection and, for the active daemon and within the rate limit, publishes its
// error message carrying how many were suppressed before it.
func (g *gate) refuse(r *wire.Rejection, now time.Time, standby bool) {
	g.m.rejected.WithLabelValues(g.plant, r.Reason).Inc()
	if standby {
		g.log.Debug("standby: measurement rejected", zap.String("reason", r.Reason), zap.String("error", r.Msg))
		return
	}
	if !g.limit.take(now) {
		g.suppress()
		g.log.Debug("measurement rejected; error message suppressed by the rate limit", zap.String("reason", r.Reason), zap.String("error", r.Msg))
		return
	}
	b, _ := json.Marshal(wire.ErrorOf(r, g.plant, now.UnixMilli(), g.suppressed))
	if !g.send(b) {
		g.suppress() // the publisher is stuck (a stalled connection): count it with the rest
		return
	}
	if g.suppressed > 0 {
		g.log.Warn("measurement rejected", zap.String("reason", r.Reason), zap.String("error", r.Msg), zap.Uint64("suppressed_before", g.suppressed))
	} else {
		g.log.Warn("measurement rejected", zap.String("reason", r.Reason), zap.String("error", r.Msg))
	}
	g.suppressed = 0
}

func (g *gate) suppress() {
	g.suppressed++
	g.m.errorsSuppressed.WithLabelValues(g.plant).Inc()
}

// tokenBucket allows burst events at once and rate per second on average.
type tokenBucket struct {
	rate, burst float64
	tokens      float64
	last        time.Time
}

func (b *tokenBucket) take(now time.Time) bool {
	switch {
	case b.last.IsZero():
		b.tokens = b.burst
		b.last = now
	case now.After(b.last):
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
