package controller

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"gbdmpc/internal/fakeclock"
	"gbdmpc/internal/testsupport"
)

// Every test must leave no goroutine behind: the daemon's actors, paho's clients and the embedded
// broker all stop when Run returns. The daemon binary some tests build is removed at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(exitHook{m}, testsupport.PahoIgnores()...)
}

// exitHook removes the shared daemon build once every test has run.
type exitHook struct{ m *testing.M }

func (h exitHook) Run() int {
	code := h.m.Run()
	testsupport.RemoveDaemonBuild()
	return code
}

func newFakeClock() *fakeclock.Clock { return fakeclock.New(time.Now()) }
