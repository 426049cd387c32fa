package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zaptest"

	"gbdmpc/configs"
	"gbdmpc/gbd"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/wire"
)

// fakeStepper answers every step with whatever decide returns; scenario tests use it to make the
// controller's behaviour (optimal, fallback, slow) a test input rather than a solver outcome.
type fakeStepper struct {
	mu     sync.Mutex
	decide func(m mpc.Measurement, deadline time.Time) (mpc.Decision, error)
	policy gbd.Policy
	steps  int
}

// newFakeStepper is a stepper whose steps decide as decide does.
func newFakeStepper(decide func(mpc.Measurement, time.Time) (mpc.Decision, error)) *fakeStepper {
	return &fakeStepper{decide: decide}
}

func (f *fakeStepper) Step(m mpc.Measurement, deadline time.Time) (mpc.Decision, error) {
	f.mu.Lock()
	decide := f.decide
	f.steps++
	f.mu.Unlock()
	return decide(m, deadline)
}

func (f *fakeStepper) SetPolicy(p gbd.Policy) {
	f.mu.Lock()
	f.policy = p
	f.mu.Unlock()
}

func (f *fakeStepper) setDecide(d func(mpc.Measurement, time.Time) (mpc.Decision, error)) {
	f.mu.Lock()
	f.decide = d
	f.mu.Unlock()
}

func optimalDecision(mpc.Measurement, time.Time) (mpc.Decision, error) {
	return mpc.Decision{Status: mpc.StatusOptimal, Apply: json.RawMessage(`{"pumps_on":[1,0,0],"flow_m3h":[40,0,0]}`),
		Plan: json.RawMessage(`{"steps":[]}`), Y: []float64{1, 0, 1}, Objective: 4.5, LBD: 4.4995, UBD: 4.5,
		Iterations: 7, SolveSeconds: 0.01}, nil
}

func fallbackDecision(mpc.Measurement, time.Time) (mpc.Decision, error) {
	return mpc.Decision{Status: mpc.StatusFallback, Apply: json.RawMessage(`{"pumps_on":[0,0,0],"flow_m3h":[0,0,0]}`),
		Objective: posInf, LBD: negInf, UBD: posInf, Reason: "solve ended no_solution", Safe: true, Fallbacks: 1}, nil
}

var posInf, negInf = func() (float64, float64) { z := 0.0; return 1 / z, -1 / z }()

// testDaemon is a Run in the background with a test MQTT client subscribed to everything it publishes.
type testDaemon struct {
	t      *testing.T
	cfg    *configs.Config
	info   Info
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
	client mqtt.Client
	msgs   chan received
	reload chan struct{}
	once   sync.Once
}

type received struct {
	topic    string
	payload  []byte
	retained bool
}

func startDaemon(t *testing.T, cfg *configs.Config, deps Deps) *testDaemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &testDaemon{t: t, cfg: cfg, cancel: cancel, done: make(chan error, 1), msgs: make(chan received, 1024),
		reload: make(chan struct{}, 1)}
	if deps.Logger == nil {
		deps.Logger = zaptest.NewLogger(t)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	d.reg = deps.Registry
	if deps.Notifier == nil {
		deps.Notifier = &recordingNotifier{}
	}
	if deps.Reload == nil {
		deps.Reload = d.reload
	}
	started := make(chan Info, 1)
	deps.Started = func(i Info) { started <- i }
	go func() { d.done <- Run(ctx, cfg, deps) }()
	select {
	case d.info = <-started:
	case err := <-d.done:
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("daemon not ready within 20s")
	}
	d.client = d.connect("gbdmpc-observer-"+randomHex(3), cfg.TopicPrefix+"/#")
	t.Cleanup(d.stop)
	return d
}

// connect opens a test client on the testDaemon's broker subscribed to filter.
func (d *testDaemon) connect(id, filter string) mqtt.Client {
	d.t.Helper()
	o := mqtt.NewClientOptions().AddBroker(d.info.BrokerURL).SetClientID(id).SetCleanSession(true).
		SetAutoReconnect(true).SetOrderMatters(true)
	if b := &d.cfg.Broker; b.Username != "" {
		pw, err := b.ResolvePassword()
		if err != nil {
			d.t.Fatal(err)
		}
		o.SetUsername(b.Username).SetPassword(pw)
	}
	if strings.HasPrefix(d.info.BrokerURL, "ssl://") {
		tc, err := tlsConfig(&d.cfg.Broker.TLS)
		if err != nil {
			d.t.Fatal(err)
		}
		o.SetTLSConfig(tc)
	}
	subscribed := make(chan struct{}, 1)
	o.SetOnConnectHandler(func(c mqtt.Client) {
		tok := c.Subscribe(filter, 1, func(_ mqtt.Client, m mqtt.Message) {
			// Never block paho's router: a stalled subscriber stalls the broker's deliveries too.
			select {
			case d.msgs <- received{topic: m.Topic(), payload: append([]byte(nil), m.Payload()...), retained: m.Retained()}:
			default:
				d.t.Log("observer buffer full: message dropped")
			}
		})
		if tok.WaitTimeout(5*time.Second) && tok.Error() == nil {
			poke(subscribed)
		}
	})
	c := mqtt.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		d.t.Fatalf("test client connect: %v", tok.Error())
	}
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		d.t.Fatal("test client not subscribed within 10s")
	}
	return c
}

// stop disconnects the observer and stops the daemon, once; tests call it before their leak check.
func (d *testDaemon) stop() {
	d.once.Do(func() {
		if d.client != nil {
			d.client.Disconnect(50)
		}
		d.cancel()
		select {
		case err := <-d.done:
			if err != nil {
				d.t.Errorf("Run returned %v", err)
			}
		case <-time.After(20 * time.Second):
			d.t.Error("Run did not return within 20s of cancel")
		}
	})
}

func (d *testDaemon) topic(plant, kind string) string { return d.cfg.Topic(plant, kind) }

func (d *testDaemon) publish(plant string, payload []byte) {
	d.t.Helper()
	if tok := d.client.Publish(d.topic(plant, "measurement"), 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		d.t.Fatalf("publish: %v", tok.Error())
	}
}

// expect waits for the next message on topic ("": any) that satisfies ok, skipping others.
func (d *testDaemon) expect(topic string, timeout time.Duration, ok func(received) bool) received {
	d.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case m := <-d.msgs:
			if (topic == "" || m.topic == topic) && (ok == nil || ok(m)) {
				return m
			}
		case <-deadline:
			d.t.Fatalf("no matching message on %s within %v", topic, timeout)
		}
	}
}

func (d *testDaemon) expectAction(plant string, mseq uint64) wire.Action {
	d.t.Helper()
	var a wire.Action
	d.expect(d.topic(plant, "action"), 10*time.Second, func(m received) bool {
		return json.Unmarshal(m.payload, &a) == nil && a.MeasurementSeq == mseq
	})
	return a
}

func (d *testDaemon) expectError(plant string) wire.ErrorMessage {
	d.t.Helper()
	var e wire.ErrorMessage
	m := d.expect(d.topic(plant, "error"), 10*time.Second, nil)
	if err := json.Unmarshal(m.payload, &e); err != nil {
		d.t.Fatalf("error payload %s: %v", m.payload, err)
	}
	return e
}

func (d *testDaemon) expectStatus(plant, state string) wire.Status {
	d.t.Helper()
	var s wire.Status
	d.expect(d.topic(plant, "status"), 10*time.Second, func(m received) bool {
		return json.Unmarshal(m.payload, &s) == nil && s.State == state
	})
	return s
}

func (d *testDaemon) counter(name string, labels ...string) float64 {
	d.t.Helper()
	return testsupport.Counter(d.t, d.reg, name, labels...)
}

// recordingNotifier remembers sd_notify messages.
type recordingNotifier struct {
	mu   sync.Mutex
	msgs []string
}

func (n *recordingNotifier) Notify(s string) error {
	n.mu.Lock()
	n.msgs = append(n.msgs, s)
	n.mu.Unlock()
	return nil
}

// count is how many messages so far start with prefix.
func (n *recordingNotifier) count(prefix string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.msgs {
		if strings.HasPrefix(m, prefix) {
			c++
		}
	}
	return c
}

func (n *recordingNotifier) has(prefix string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, m := range n.msgs {
		if strings.HasPrefix(m, prefix) {
			return true
		}
	}
	return false
}

// pumpMeasurement is a valid pump-station measurement, with fields to override.
func pumpMeasurement(seq uint64, ts time.Time, override map[string]any) []byte {
	m := map[string]any{
		"v": 1, "seq": seq, "ts_ms": ts.UnixMilli(), "level_m": 3.0, "pumps_on": []int{0, 1, 0},
		"demand_m3h": repeat(80, 16), "price_eur_kwh": repeat(0.2, 16),
	}
	for k, v := range override {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprint("test measurement: ", err))
	}
	return b
}

func repeat(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

// fakeDeps wires a fakeStepper in place of the mpc controller.
func fakeDeps(f *fakeStepper) Deps {
	return Deps{NewStepper: func(mpc.Family, mpc.Options) (Stepper, error) { return f, nil }}
}

// counterReaches waits until a metric reaches want: metrics are updated just after the publish the
// test has already seen, so an exact read right away would race.
func (d *testDaemon) counterReaches(want float64, name string, labels ...string) bool {
	d.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for d.counter(name, labels...) != want {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// poke signals ch without blocking: a signal already pending says the same.
func poke(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
