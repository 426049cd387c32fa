package controller

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/internal/testsupport"
)

// BenchmarkLoopOverhead measures what the daemon adds around a solve: measurement received →
// action handed to MQTT, minus the solve, with an instant fake solve and the real pump-station
// decoding, on the embedded broker over loopback. It reports the daemon's own overhead (from its
// histogram) and the plant's round trip (publish → action received, two broker hops included).
//
//	go test ./controller -run '^$' -bench LoopOverhead -benchtime 2000x
func BenchmarkLoopOverhead(b *testing.B) {
	f := newFakeStepper(optimalDecision)
	reg := prometheus.NewRegistry()
	deps := fakeDeps(f)
	deps.Registry, deps.Logger, deps.Notifier = reg, zap.NewNop(), &recordingNotifier{}
	cfg := testsupport.EmbeddedConfig()
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
	b.ReportMetric(quantile(rtt, 0.5)*1e6, "rtt-p50-µs")
	b.ReportMetric(quantile(rtt, 0.99)*1e6, "rtt-p99-µs")
	p50, p99 := testsupport.HistQuantiles(b, reg, "gbdmpc_controller_loop_overhead_seconds")
	b.ReportMetric(p50*1e6, "overhead-p50-µs")
	b.ReportMetric(p99*1e6, "overhead-p99-µs")
}

// quantile is the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
