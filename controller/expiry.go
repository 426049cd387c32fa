package controller

import (
	"fmt"
	"time"

	"gbdmpc/configs"
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
// would have to end before it arrived is stale on arrival (gate.go); one whose step ends past the
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
