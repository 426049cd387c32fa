// Package fakeclock is the tests' one fake clock for the Clock interfaces of gbd, mpc, controller
// and telemetry: time moves only when the test moves it (Advance), or by a fixed tick at every
// reading (Ticking), so that a solve's or a step's time is deterministic. Safe for concurrent use.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a fake clock.
type Clock struct {
	mu   sync.Mutex
	now  time.Time
	tick time.Duration
}

// New is a clock standing at start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Ticking is a clock at start that moves forward by tick at every reading, before it is read.
func Ticking(start time.Time, tick time.Duration) *Clock { return &Clock{now: start, tick: tick} }

// Now implements the Clock interfaces.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.tick)
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set puts the clock at t (backwards too: a test that measured something by moving it may put it
// back).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}
