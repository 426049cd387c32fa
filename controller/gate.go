package controller

import (
	"encoding/json"
	"math"
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
	if rej := g.judgeTime(env.TSms, seq, now); rej != nil {
		return nil, env, rej
	}
	m, err := g.family.DecodeMeasurement(payload)
	if err != nil {
		return nil, env, wire.Reject(wire.FamilyReason(err), &seq, "%v", err)
	}
	return m, env, nil
}

// judgeTime rejects a ts_ms more than max_age away from now, either way, or too old to be answered
// before its action expires. It compares instants, not
// their difference: any int64 ts_ms is a valid time.Time, but a difference past ±292 years saturates
// at the largest Duration, and negating the smallest one wraps to itself, which once let a ts_ms
// written in microseconds or nanoseconds (10³ or 10⁶ times too large) through as fresh.
func (g *gate) judgeTime(tsMs int64, seq uint64, now time.Time) *wire.Rejection {
	ts := time.UnixMilli(tsMs)
	switch {
	case ts.Before(now.Add(-g.cfg.MaxAge)):
		return wire.Reject(wire.ReasonStale, &seq, "ts_ms %d is %v old, older than max_age %v", tsMs, now.Sub(ts).Round(time.Millisecond), g.cfg.MaxAge)
	case ts.After(now.Add(g.cfg.MaxAge)):
		return wire.Reject(wire.ReasonFuture, &seq, "ts_ms %d is %s ahead of the controller's clock (more than max_age %v)%s",
			tsMs, skew(ts.Sub(now)), g.cfg.MaxAge, unitHint(tsMs, now.UnixMilli()))
	}
	// Young enough, but maybe too old to be answered before its action expires (expiry.go).
	if d := deadlineOf(g.cfg, now, tsMs); !now.Before(d.solveBy()) {
		return wire.Reject(wire.ReasonStale, &seq, "ts_ms %d is %v old: its action would expire at %d ms (ts_ms + period %v), %v from now, too soon to solve and publish it (deadline_reserve %v before the expiry and for the solve)",
			tsMs, now.Sub(ts).Round(time.Millisecond), d.expires.UnixMilli(), g.cfg.Period, d.expires.Sub(now).Round(time.Millisecond), g.cfg.DeadlineReserve)
	}
	return nil
}

// skew prints how far ahead a timestamp is; Sub saturates past ±292 years, which is then what it says.
func skew(d time.Duration) string {
	if d == math.MaxInt64 {
		return "more than 292 years"
	}
	return d.Round(time.Millisecond).String()
}

// unitHint names the likely mistake when ts_ms is about 10³ or 10⁶ times the clock in ms: a timestamp
// in microseconds or nanoseconds.
func unitHint(tsMs, nowMs int64) string {
	if nowMs <= 0 || tsMs <= 0 {
		return ""
	}
	r := float64(tsMs) / float64(nowMs)
	switch {
	case r > 500 && r < 2000:
		return "; it looks like microseconds, ts_ms is Unix milliseconds"
	case r > 5e5 && r < 2e6:
		return "; it looks like nanoseconds, ts_ms is Unix milliseconds"
	}
	return ""
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
