package controller

import (
	"context"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"go.uber.org/zap"
)

// Notifier delivers sd_notify(3) messages ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=…").
type Notifier interface {
	Notify(state string) error
}

// SystemdNotifier talks to systemd through $NOTIFY_SOCKET; outside systemd it does nothing.
type SystemdNotifier struct{}

// Notify implements Notifier.
func (SystemdNotifier) Notify(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// SystemdWatchdogInterval is WatchdogSec as systemd passed it ($WATCHDOG_USEC), 0 when disabled.
func SystemdWatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0
	}
	return d
}

// watchdog pings systemd only while every plant loop is alive, so a loop wedged in a solver (or
// deadlocked) gets the daemon restarted even when other plants are fine.
//
// Each loop records a heartbeat whenever it goes round its select: after each message and, when
// idle, on its own ticker (beatEvery), so an idle plant keeps the daemon alive without measurements.
// A loop counts as alive while its last heartbeat is younger than its deadline plus two ticks plus
// a second — a Step may run up to the deadline (and a little past it) without going round. A plant
// loop also kicks the watchdog after every completed cycle, so a healthy cycle pings at once.
type watchdog struct {
	n        Notifier
	interval time.Duration
	loops    []*plantLoop
	clock    Clock
	log      *zap.Logger
	kicks    chan struct{}
}

func newWatchdog(n Notifier, interval time.Duration, clock Clock, log *zap.Logger) *watchdog {
	return &watchdog{n: n, interval: interval, clock: clock, log: log, kicks: make(chan struct{}, 1)}
}

// kick is called by a plant loop after a healthy cycle; it never blocks.
func (w *watchdog) kick() {
	select {
	case w.kicks <- struct{}{}:
	default:
	}
}

func (w *watchdog) run(ctx context.Context) error {
	if w.interval <= 0 {
		<-ctx.Done()
		return nil
	}
	// systemd recommends pinging at half the interval; a third leaves room for a late tick.
	t := time.NewTicker(w.interval / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.kicks:
		}
		if stale := w.stale(); stale != "" {
			w.log.Warn("watchdog withheld: plant loop not alive", zap.String("plant", stale))
			continue
		}
		if err := w.n.Notify(daemon.SdNotifyWatchdog); err != nil {
			w.log.Warn("watchdog notify", zap.Error(err))
		}
	}
}

// stale returns the id of a plant loop that has not gone round in time, or "".
func (w *watchdog) stale() string {
	now := w.clock.Now()
	for _, l := range w.loops {
		allow := l.cfg.Deadline + 2*l.beatEvery + time.Second
		if now.Sub(time.Unix(0, l.heartbeat.Load())) > allow {
			return l.cfg.ID
		}
	}
	return ""
}
