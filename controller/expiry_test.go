package controller

import (
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// TestExpiryBoundsTheStep drives one plant loop (no HA, period 1 s, deadline 500 ms, reserve 50 ms)
// on a fake clock with measurements that arrive 800 ms old: their actions expire 200 ms after
// receipt, long before receipt + deadline. The solve is told to end by expiry − 2·reserve; an action
// is published only while it is more than the reserve from its expiry, and otherwise withheld and
// counted as a deadline miss, never published expired.
func TestExpiryBoundsTheStep(t *testing.T) {
	const age = 800 * time.Millisecond
	cases := []struct {
		name      string
		wait      time.Duration // in the lane before the loop takes it
		solve     time.Duration // what the step takes
		published bool
		solved    bool
	}{
		{"solved in time", 0, 60 * time.Millisecond, true, true},
		{"overran into the reserve", 0, 160 * time.Millisecond, false, true},
		{"overran past the expiry", 0, 210 * time.Millisecond, false, true},
		{"waited past its solve-by", 120 * time.Millisecond, 0, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lt := newLoopTestFor(t, configs.Plant{ID: "p1", Period: time.Second, Deadline: 500 * time.Millisecond,
				DeadlineReserve: 50 * time.Millisecond, MaxAge: time.Second, Mailbox: 4}, nil)
			l, out, reg, f, clock := lt.l, lt.out, lt.reg, lt.f, lt.clock
			var gotBy time.Time
			f.setDecide(func(m mpc.Measurement, by time.Time) (mpc.Decision, error) {
				gotBy = by
				clock.Advance(c.solve)
				return optimalDecision(m, by)
			})
			received := clock.Now()
			ts := received.Add(-age)
			mm, err := l.family.DecodeMeasurement(pumpMeasurement(7, ts, nil))
			if err != nil {
				t.Fatal(err)
			}
			l.in.deliver(inbound{meas: mm, env: wire.Envelope{Seq: 7, TSms: ts.UnixMilli()}, received: received})
			clock.Advance(c.wait)
			for !l.caughtUp() {
				l.work()
			}
			expires := ts.Add(time.Second)
			if c.solved != (f.steps == 1) {
				t.Fatalf("%d steps, want solved=%v", f.steps, c.solved)
			}
			if c.solved && !gotBy.Equal(expires.Add(-100*time.Millisecond)) {
				t.Errorf("solve told to end %v after receipt, want %v (expiry − 2·reserve)", gotBy.Sub(received), expires.Add(-100*time.Millisecond).Sub(received))
			}
			actions := take[wire.Action](t, out, "action")
			for _, a := range actions {
				if a.TSms >= a.ExpiresMs {
					t.Errorf("action published at %d, at or after its expiry %d", a.TSms, a.ExpiresMs)
				}
			}
			errs := take[wire.ErrorMessage](t, out, "error")
			misses := testsupport.Counter(t, reg, "gbdmpc_controller_deadline_misses_total", "plant", "p1")
			if c.published {
				if len(actions) != 1 || len(errs) != 0 || misses != 0 {
					t.Fatalf("%d actions, errors %+v, %v misses; want one action", len(actions), errs, misses)
				}
				return
			}
			if len(actions) != 0 || len(errs) != 1 || errs[0].Reason != wire.ReasonDeadline || !strings.Contains(errs[0].Error, "expires at") || misses != 1 {
				t.Fatalf("%d actions, errors %+v, %v misses; want the action withheld, one deadline error naming the expiry, one miss", len(actions), errs, misses)
			}
		})
	}
}
