package controller

import (
	"time"
)

// solveSlots bounds how many plant loops solve at once, daemon-wide, to the cores the daemon may
// use. Measurements of a fleet arrive together (plants sample on the same second), and without a
// bound every loop starts its solve at once: the Go scheduler then shares the cores among all of
// them, each solve runs at a 1/n share, and all of them reach their deadlines together (measured
// at 256 pump stations on 2 cores: a run queue of 100–200 goroutines, 16 % of the CPU in
// preemption, more than half the steps late). With the bound, a solve runs at full speed once it
// starts and the loops take their turns in arrival order (a channel's waiting senders are served
// first come, first served), so the early ones finish early and only a burst larger than the cores
// can clear before the deadline costs steps, the latest ones, each rejected before its solve
// rather than published late. Waiting for a slot is part of the loop's overhead, not of the solve.
type solveSlots chan struct{}

func newSolveSlots(n int) solveSlots { return make(solveSlots, max(n, 1)) }

// acquire waits for a slot until by (on the wall clock, which the timer runs on) and reports
// whether it got one. A nil solveSlots never waits.
func (s solveSlots) acquire(by time.Time) bool {
	if s == nil {
		return true
	}
	select {
	case s <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(time.Until(by))
	defer t.Stop()
	select {
	case s <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// release gives back a slot acquire got.
func (s solveSlots) release() {
	if s != nil {
		<-s
	}
}
