package testbed

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"gbdmpc/configs"
	"gbdmpc/controller"
)

// daemon is controller.Run in this process, driven through its exported API only.
type daemon struct {
	t      *testing.T
	info   controller.Info
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs the daemon for cfg and returns once it is ready (the test fails after 20 s);
// it stops at the test's cleanup if the test did not stop it.
func startDaemon(t *testing.T, cfg *configs.Config, deps controller.Deps) *daemon {
	t.Helper()
	if deps.Logger == nil {
		deps.Logger = zaptest.NewLogger(t)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	started := make(chan controller.Info, 1)
	deps.Started = func(i controller.Info) { started <- i }
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- controller.Run(ctx, cfg, deps) }()
	select {
	case d.info = <-started:
	case err := <-d.done:
		cancel()
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("daemon not ready within 20s")
	}
	t.Cleanup(d.stop)
	return d
}

// stop ends the daemon and waits for Run to return (once).
func (d *daemon) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	if err := <-d.done; err != nil && err != context.Canceled {
		d.t.Errorf("daemon: %v", err)
	}
}
