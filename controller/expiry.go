package controller

import (
	"fmt"
	"math"
	"time"

	"gbdmpc/configs"
	"gbdmpc/wire"
)

// An action expires one period after its measurement was taken (expires_ms = ts_ms + period), and
// no action goes out at or after its expiry (specs/interfaces.md §2). A measurement's deadline
// from receipt (configs.Plant.Deadline) does not see that: a measurement that arrives 990 ms old
// with a 1 s period would get half a second to solve and an action already expired. So a step's
// effective deadline is the earlier of
//
//   - receipt + deadline, and
//   - the action's expiry less deadline_reserve, so that what goes out at the last moment still
//     has the reserve to reach the plant,
//
// and the solve aims at it less the reserve again, as it always did. A measurement whose solve
// would have to end before it arrived is stale on arrival (judgeArrival); one whose step ends past the
// effective deadline has its action withheld and counted as a deadline miss (plantLoop.withhold).

// stepDeadline is when a measurement's action must be out, and why.
type stepDeadline struct {
	at time.Time
	// expires is the action's expiry; byExpiry: at is the expiry less the reserve, before the
	// deadline from receipt.
	expires  time.Time
	byExpiry bool
	reserve  time.Duration
}

// deadlineOf is the effective deadline of a measurement taken at tsMs (already judged fresh, so
// the instants below are far from any overflow) and received at received.
func deadlineOf(p *configs.Plant, received time.Time, tsMs int64) stepDeadline {
	d := stepDeadline{at: received.Add(p.Deadline), expires: time.UnixMilli(tsMs).Add(p.Period), reserve: p.DeadlineReserve}
	if e := d.expires.Add(-p.DeadlineReserve); e.Before(d.at) {
		d.at, d.byExpiry = e, true
	}
	return d
}

// solveBy is when the solve must end: the reserve before the deadline, for what a solve cannot
// stop in the middle of and for publishing.
func (d stepDeadline) solveBy() time.Time { return d.at.Add(-d.reserve) }

// late reports whether an action published at now would miss the deadline or be expired.
func (d stepDeadline) late(now time.Time) bool { return now.After(d.at) || !now.Before(d.expires) }

// what names the deadline for messages: the deadline, or the expiry it came from.
func (d stepDeadline) what() string {
	if d.byExpiry {
		return fmt.Sprintf("its deadline (its action expires at %d ms, ts_ms + period; less deadline_reserve %v)", d.expires.UnixMilli(), d.reserve)
	}
	return "its deadline"
}

// judgeArrival is the arrival rule of a measurement's time, judged in the session's callback
// (gate.go) with plant p's settings and nothing else: it rejects a ts_ms more than max_age away
// from now, either way, or too old to be answered before its action expires (stale on arrival).
// It compares instants, not their difference: any int64 ts_ms is a valid time.Time, but a difference past ±292 years saturates
// at the largest Duration, and negating the smallest one wraps to itself, which once let a ts_ms
// written in microseconds or nanoseconds (10³ or 10⁶ times too large) through as fresh.
func judgeArrival(p *configs.Plant, tsMs int64, seq uint64, now time.Time) *wire.Rejection {
	ts := time.UnixMilli(tsMs)
	switch {
	case ts.Before(now.Add(-p.MaxAge)):
		return wire.Reject(wire.ReasonStale, &seq, "ts_ms %d is %v old, older than max_age %v", tsMs, now.Sub(ts).Round(time.Millisecond), p.MaxAge)
	case ts.After(now.Add(p.MaxAge)):
		return wire.Reject(wire.ReasonFuture, &seq, "ts_ms %d is %s ahead of the controller's clock (more than max_age %v)%s",
			tsMs, skew(ts.Sub(now)), p.MaxAge, unitHint(tsMs, now.UnixMilli()))
	}
	// Young enough, but maybe too old to be answered before its action expires (expiry.go).
	if d := deadlineOf(p, now, tsMs); !now.Before(d.solveBy()) {
		return wire.Reject(wire.ReasonStale, &seq, "ts_ms %d is %v old: its action would expire at %d ms (ts_ms + period %v), %v from now, too soon to solve and publish it (deadline_reserve %v before the expiry and for the solve)",
			tsMs, now.Sub(ts).Round(time.Millisecond), d.expires.UnixMilli(), p.Period, d.expires.Sub(now).Round(time.Millisecond), p.DeadlineReserve)
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
