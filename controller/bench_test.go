package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/plant/sim"
)

// BenchmarkLoopOverhead measures what the daemon adds around a solve: measurement received →
// action handed to MQTT, minus the solve, with an instant fake solve and the real pump-station
// decoding, on the embedded broker over loopback. It reports the daemon's own overhead (from its
// histogram) and the plant's round trip (publish → action received, two broker hops included).
//
//	go test ./controller -run '^$' -bench LoopOverhead -benchtime 2000x
func BenchmarkLoopOverhead(b *testing.B) {
	f := &fakeStepper{}
	f.setDecide(optimalDecision)
	reg := prometheus.NewRegistry()
	deps := fakeDeps(f)
	deps.Registry, deps.Logger, deps.Notifier = reg, zap.NewNop(), &recordingNotifier{}
	cfg := testConfig()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan Info, 1)
	deps.Started = func(i Info) { started <- i }
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, deps) }()
	info := <-started
	defer func() { cancel(); <-done }()

	actions := make(chan []byte, 16)
	sub := make(chan struct{}, 1)
	o := mqtt.NewClientOptions().AddBroker(info.BrokerURL).SetClientID("bench-plant").SetOnConnectHandler(func(c mqtt.Client) {
		c.Subscribe(cfg.Topic("p1", "action"), 1, func(_ mqtt.Client, m mqtt.Message) { actions <- m.Payload() }).Wait()
		sub <- struct{}{}
	})
	c := mqtt.NewClient(o)
	c.Connect().Wait()
	<-sub
	defer c.Disconnect(50)

	rtt := make([]float64, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		c.Publish(cfg.Topic("p1", "measurement"), 1, false, pumpMeasurement(uint64(i+1), t0, nil))
		<-actions
		rtt = append(rtt, time.Since(t0).Seconds())
	}
	b.StopTimer()
	slices.Sort(rtt)
	b.ReportMetric(pct(rtt, 0.5)*1e6, "rtt-p50-µs")
	b.ReportMetric(pct(rtt, 0.99)*1e6, "rtt-p99-µs")
	p50, p99 := histQuantiles(b, reg, "gbdmpc_controller_loop_overhead_seconds")
	b.ReportMetric(p50*1e6, "overhead-p50-µs")
	b.ReportMetric(p99*1e6, "overhead-p99-µs")
}

// histQuantiles interpolates the 0.5 and 0.99 quantiles of a gathered histogram within buckets.
func histQuantiles(tb testing.TB, reg *prometheus.Registry, name string) (p50, p99 float64) {
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		q := func(q float64) float64 {
			rank := q * float64(h.GetSampleCount())
			lo, prev := 0.0, 0.0
			for _, bk := range h.GetBucket() {
				c := float64(bk.GetCumulativeCount())
				if c >= rank {
					if c == prev {
						return bk.GetUpperBound()
					}
					return lo + (bk.GetUpperBound()-lo)*(rank-prev)/(c-prev)
				}
				lo, prev = bk.GetUpperBound(), c
			}
			return lo
		}
		return q(0.5), q(0.99)
	}
	tb.Fatalf("no histogram %s", name)
	return 0, 0
}

// TestLongRunDeadlines is a measurement, not a test of the default suite: the real daemon (Ipopt,
// enumeration master) serves the simulated pump station over the embedded broker for 2,000 periods of
// 200 ms with a 150 ms deadline, then reports deadline misses (actions published after their
// deadline), missed periods, statuses and the process's peak and current RSS.
//
//	GBDMPC_LONG_RUN=1 go test ./controller -run LongRunDeadlines -v -timeout 30m
//
// GBDMPC_LONG_STEPS and GBDMPC_LONG_PERIOD override 2000 and 200ms.
func TestLongRunDeadlines(t *testing.T) {
	if os.Getenv("GBDMPC_LONG_RUN") == "" {
		t.Skip("long measurement: set GBDMPC_LONG_RUN=1")
	}
	steps, period := 2000, 200*time.Millisecond
	if s := os.Getenv("GBDMPC_LONG_STEPS"); s != "" {
		fmt.Sscan(s, &steps)
	}
	if s := os.Getenv("GBDMPC_LONG_PERIOD"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			period = d
		}
	}
	deadline := period * 3 / 4
	cfg := testConfig(configs.Plant{ID: "pump1", Family: "pumpstation", Period: period, Deadline: deadline,
		MaxAge: period, TMin: deadline / 20, TMax: deadline / 5})
	reg := prometheus.NewRegistry()
	d := startDaemon(t, cfg, Deps{Registry: reg, Logger: zap.NewNop()})
	d.client.Disconnect(50) // nobody reads the observer here; it must not load the broker
	start := time.Now()
	res, err := RunTestbed(t.Context(), TestbedOptions{BrokerURL: d.info.BrokerURL, PlantID: "pump1", Steps: steps,
		Period: period, Sim: sim.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	misses := d.counter("gbdmpc_controller_deadline_misses_total", "plant", "pump1")
	solveP50, solveP99 := histQuantiles(t, reg, "gbdmpc_controller_solve_duration_seconds")
	ovP50, ovP99 := histQuantiles(t, reg, "gbdmpc_controller_loop_overhead_seconds")
	hwm, rss := procStatus("VmHWM"), procStatus("VmRSS")
	js, _ := json.MarshalIndent(s, "", "  ")
	t.Logf("%d steps of %v (deadline %v) in %v", steps, period, deadline, time.Since(start).Round(time.Second))
	t.Logf("deadline misses %v (%.2f%%), missed periods %d, optimal %d, gap %d, fallbacks %d, violations %d",
		misses, 100*misses/float64(steps), s.MissedPeriods, s.Optimal, s.Gap, s.Fallbacks, s.Violations)
	t.Logf("solve p50 %.1f ms p99 %.1f ms; overhead p50 %.0f µs p99 %.0f µs; round trip p50 %.1f ms p99 %.1f ms",
		solveP50*1e3, solveP99*1e3, ovP50*1e6, ovP99*1e6, s.LatencyP50*1e3, s.LatencyP99*1e3)
	t.Logf("process RSS %s (peak %s) after %d steps — daemon, embedded broker and testbed in one process", rss, hwm, steps)
	t.Logf("summary %s", js)
	d.stop()
}

func procStatus(key string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
