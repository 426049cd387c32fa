package controller

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"gbdmpc/internal/testsupport"
)

// Every test must leave no goroutine behind: the daemon's actors, paho's clients and the embedded
// broker all stop when Run returns. The daemon binary some tests build is removed at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(exitHook{m})
}

// exitHook removes the shared daemon build once every test has run.
type exitHook struct{ m *testing.M }

func (h exitHook) Run() int {
	code := h.m.Run()
	testsupport.RemoveDaemonBuild()
	return code
}

// fakeClock is the controller's time in tests that decide by time (ages, deadlines, readiness).
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
