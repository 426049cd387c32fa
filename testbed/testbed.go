package testbed

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/controller"
	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/sim"
	"gbdmpc/wire"
)

// DefaultSpeedUp makes the pump station's 15-minute period one second of wall-clock time.
const DefaultSpeedUp = 900

// TestbedOptions configure `gbdmpc simulate --mqtt`: the simulated pump station as an MQTT client of
// a running daemon.
type TestbedOptions struct {
	BrokerURL   string // e.g. tcp://127.0.0.1:1883
	Username    string
	Password    string
	TopicPrefix string // default "gbdmpc"
	PlantID     string // the daemon's plant id (default "pump1")
	ClientID    string // default gbdmpc-sim-<random>

	Sim   sim.Config // the plant (sim.DefaultConfig() when zero)
	Steps int        // control periods (96 = one plant day)
	// SpeedUp runs plant time this many times faster than real time: a period of Δt = 15 min becomes
	// 15 min / SpeedUp of wall-clock time (default 900: 1 s, the demo configuration's period).
	// Period, if set, wins.
	SpeedUp float64
	Period  time.Duration
	// Phase delays the first measurement by this much after the daemon is online: the plant's
	// sampling instant within its period. Plants of a fleet sample on their own clocks, so their
	// phases differ; equal phases make every period one burst.
	Phase time.Duration
	// WaitOnline bounds the wait for the daemon's retained status to say online (default 30s;
	// negative: do not wait).
	WaitOnline time.Duration
	// OutDir, if set, receives steps.csv, summary.json, summary.txt and figure.png (plant/sim).
	OutDir string
	// KeepPayloads keeps every measurement and action in the result (tests compare them).
	KeepPayloads bool
	// OnStep, if set, is called after every period.
	OnStep func(TestbedStep)

	Clock  controller.Clock // default wall clock
	Logger *zap.Logger      // default no-op
}

// TestbedStep is one period as the plant saw it.
type TestbedStep struct {
	Seq         uint64
	Measurement []byte       // the payload published (KeepPayloads only)
	Action      *wire.Action // the action applied (nil when none arrived in time)
	Late        bool         // an action for this seq arrived after the period ended
	// Dropped counts actions the plant refused under the plant rule while it waited: expired, not
	// answering this measurement, or fenced off by a lower epoch than one already seen.
	Dropped    int
	Rejected   string // the daemon's error message for this seq, if any
	Latency    time.Duration
	Transition sim.Transition
}

// TestbedSummary is what `gbdmpc simulate --mqtt` prints.
type TestbedSummary struct {
	Steps           int     `json:"steps"`
	ActionsReceived int     `json:"actions_received"`
	MissedPeriods   int     `json:"missed_periods"`  // no action before the period ended (the plant kept its last one)
	Rejected        int     `json:"rejected"`        // measurements the daemon refused on the error topic
	DroppedActions  int     `json:"dropped_actions"` // refused by the plant rule (expired, stale, lower epoch)
	Violations      int     `json:"violations"`
	Fallbacks       int     `json:"fallbacks"`
	Optimal         int     `json:"optimal"`
	Gap             int     `json:"gap"`
	LatencyP50      float64 `json:"latency_seconds_p50"` // measurement published → action received
	LatencyP99      float64 `json:"latency_seconds_p99"`
	LatencyMax      float64 `json:"latency_seconds_max"`
	PeriodSeconds   float64 `json:"period_seconds"`
	// Plant is the simulator's own summary (cost, levels, energy, …).
	Plant sim.Summary `json:"plant"`
}

// TestbedResult is a finished run.
type TestbedResult struct {
	Summary TestbedSummary
	Steps   []TestbedStep
	Run     *sim.Run // for plotting (plant/sim figure)
}

// inbound is a received message, copied out of paho's callback.
type inbound struct {
	topic   string
	payload []byte
	at      time.Time
}

// inbox hands messages from paho's callback goroutine to the runner through a buffered channel.
// A full buffer drops the message (each runner says why that is safe), and after close a late
// callback drops it instead of sending on a channel nobody reads any more.
type inbox struct {
	ch     chan inbound
	clock  gbd.Clock // stamps the arrival (nil: no stamp)
	mu     sync.Mutex
	closed bool
}

func newInbox(size int, clock gbd.Clock) *inbox {
	return &inbox{ch: make(chan inbound, size), clock: clock}
}

// recv is the paho message handler.
func (b *inbox) recv(_ mqtt.Client, m mqtt.Message) {
	w := inbound{topic: m.Topic(), payload: append([]byte(nil), m.Payload()...)}
	if b.clock != nil {
		w.at = b.clock.Now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	select {
	case b.ch <- w:
	default:
	}
}

func (b *inbox) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// subscribeOnConnect is an OnConnect handler that subscribes to subs with h on every connection,
// and the channel that signals the first acknowledged subscription.
func subscribeOnConnect(subs map[string]byte, h mqtt.MessageHandler) (mqtt.OnConnectHandler, <-chan struct{}) {
	subscribed := make(chan struct{}, 1)
	return func(c mqtt.Client) {
		tok := c.SubscribeMultiple(subs, h)
		if tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
			select {
			case subscribed <- struct{}{}:
			default:
			}
		}
	}, subscribed
}

// RunTestbed runs the simulated pump station against a daemon over MQTT until Steps periods have
// passed or ctx ends. Every period it publishes a measurement (seq from 1, ts_ms = now) and applies
// an action under the plant rule of specs/interfaces.md §2 (plantRule), if one arrives before the
// period ends; otherwise the plant keeps its previous pump commands, as a real PLC would, and the
// period counts as missed.
func RunTestbed(ctx context.Context, o TestbedOptions) (*TestbedResult, error) {
	if o.Steps < 1 {
		return nil, fmt.Errorf("testbed: need at least one step, got %d", o.Steps)
	}
	if o.BrokerURL == "" {
		return nil, errors.New("testbed: no broker URL")
	}
	if o.TopicPrefix == "" {
		o.TopicPrefix = "gbdmpc"
	}
	if o.PlantID == "" {
		o.PlantID = "pump1"
	}
	if o.ClientID == "" {
		o.ClientID = "gbdmpc-sim-" + randomHex(4)
	}
	if o.Sim.Plant.Horizon == 0 {
		o.Sim = sim.DefaultConfig()
	}
	if o.SpeedUp <= 0 {
		o.SpeedUp = DefaultSpeedUp
	}
	if o.Period <= 0 {
		o.Period = time.Duration(o.Sim.Plant.Dt * float64(time.Hour) / o.SpeedUp)
	}
	if o.WaitOnline == 0 {
		o.WaitOnline = 30 * time.Second
	}
	if o.Clock == nil {
		o.Clock = gbd.RealClock
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	plant, err := sim.New(o.Sim)
	if err != nil {
		return nil, err
	}
	pc := o.Sim.Plant
	topic := func(kind string) string { return o.TopicPrefix + "/" + o.PlantID + "/" + kind }

	// The testbed reads continuously: a full buffer means it is gone.
	box := newInbox(256, o.Clock)
	in := box.ch
	onConnect, subscribed := subscribeOnConnect(map[string]byte{topic("action"): 1, topic("error"): 0, topic("status"): 1}, box.recv)
	opts := mqtt.NewClientOptions().AddBroker(o.BrokerURL).SetClientID(o.ClientID).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectRetry(true).
		SetConnectRetryInterval(250 * time.Millisecond).SetMaxReconnectInterval(time.Second).
		SetKeepAlive(10 * time.Second).SetConnectTimeout(5 * time.Second).
		SetOnConnectHandler(onConnect)
	if o.Username != "" {
		opts.SetUsername(o.Username).SetPassword(o.Password)
	}
	client := mqtt.NewClient(opts)
	client.Connect()
	defer func() {
		client.Disconnect(100)
		box.close()
	}()
	select {
	case <-subscribed:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(max(o.WaitOnline, 10*time.Second)):
		return nil, fmt.Errorf("testbed: could not connect and subscribe to %s", o.BrokerURL)
	}
	if o.WaitOnline > 0 {
		if err := waitOnline(ctx, in, topic("status"), o.WaitOnline); err != nil {
			return nil, err
		}
	}

	if err := sleepCtx(ctx, o.Phase); err != nil {
		return nil, err
	}
	res := &TestbedResult{Summary: TestbedSummary{PeriodSeconds: o.Period.Seconds()}}
	rule := &plantRule{clock: o.Clock}
	var recs []sim.StepRecord
	lastOn, lastFlow := append([]int(nil), o.Sim.PumpsOn0...), make([]float64, pc.NP())
	start := o.Clock.Now()
	for k := range o.Steps {
		seq := uint64(k + 1)
		periodEnd := start.Add(time.Duration(k+1) * o.Period)
		st := TestbedStep{Seq: seq}
		payload := measurementPayload(plant.Instance(), seq, o.Clock.Now())
		if o.KeepPayloads {
			st.Measurement = payload
		}
		sent := o.Clock.Now()
		client.Publish(topic("measurement"), 1, false, payload)
		act, err := awaitAction(ctx, in, topic, seq, periodEnd, &st, rule)
		if err != nil {
			return res, err
		}
		rec := sim.StepRecord{Status: "missed"}
		if act != nil {
			a, err := pumpstation.DecodeApply(act.Apply, &pc)
			if err != nil {
				return res, fmt.Errorf("testbed: seq %d: %w", seq, err)
			}
			lastOn, lastFlow = a.PumpsOn, a.Flow
			st.Action, st.Latency = &act.Action, act.receivedAt.Sub(sent)
			rec = sim.StepRecord{Status: act.Status, Reason: act.Reason, Objective: nanIfNull(act.Objective),
				LBD: float64(act.LBD), UBD: float64(act.UBD), Iterations: act.Iterations, SolveSeconds: act.SolveSeconds, Safe: act.Safe,
				Relaxed: relaxationOf(act.Relaxed)}
			if act.Agent != nil {
				rec.Agent = gbd.AgentStats{Proposed: act.Agent.Proposed, Feasible: act.Agent.Feasible, Accepted: act.Agent.Accepted,
					SolverSelected: act.Agent.SolverSelected, Repeated: act.Agent.Repeated, Final: act.Agent.Final}
			}
		}
		tr, err := plant.Step(lastOn, lastFlow)
		if err != nil {
			return res, err
		}
		st.Transition, rec.Transition = tr, tr
		recs = append(recs, rec)
		res.Steps = append(res.Steps, st)
		if o.OnStep != nil {
			o.OnStep(st)
		}
		// Keep the cadence: the next measurement goes out when this period ends, not earlier.
		if err := sleepCtx(ctx, periodEnd.Sub(o.Clock.Now())); err != nil {
			return res, err
		}
	}
	res.Run = &sim.Run{Steps: recs, Summary: sim.Summarize(recs, plant, &pc), Mismatch: plant.Mismatch()}
	res.Summary.fill(res.Steps, res.Run.Summary)
	if o.OutDir != "" {
		if err := res.Run.Write(o.OutDir, &pc); err != nil {
			return res, err
		}
	}
	return res, nil
}

// measurementPayload is the pump station's measurement with the daemon's envelope. ts_ms is wall
// time, since the daemon checks it against its own clock (the simulator's plant time would be stale).
func measurementPayload(in pumpstation.Instance, seq uint64, now time.Time) []byte {
	b, _ := wire.Measurement(seq, now.UnixMilli(), in) // an Instance always marshals
	return b
}

// receivedAction is an Action with its arrival time.
type receivedAction struct {
	wire.Action
	receivedAt time.Time
}

// plantRule is what a plant does with an action (specs/interfaces.md §2): apply it only if it is
// unexpired, answers the latest measurement, and carries an epoch not lower than the highest seen.
// The epoch is remembered from every action seen, applied or not.
type plantRule struct {
	clock   controller.Clock
	highest uint64
}

// admit reports whether a may be applied while seq is the latest measurement.
func (r *plantRule) admit(a *wire.Action, seq uint64) bool {
	fenced := a.Epoch < r.highest
	r.highest = max(r.highest, a.Epoch)
	return !fenced && a.MeasurementSeq == seq && r.clock.Now().UnixMilli() <= a.ExpiresMs
}

func awaitAction(ctx context.Context, in <-chan inbound, topic func(string) string, seq uint64, until time.Time, st *TestbedStep, rule *plantRule) (*receivedAction, error) {
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, nil
		case w := <-in:
			switch w.topic {
			case topic("action"):
				var a receivedAction
				if err := json.Unmarshal(w.payload, &a.Action); err != nil {
					continue
				}
				a.receivedAt = w.at
				if rule.admit(&a.Action, seq) {
					return &a, nil
				}
				st.Dropped++
				if a.MeasurementSeq < seq {
					st.Late = true // an earlier period's answer, too late to use
				}
			case topic("error"):
				var e wire.ErrorMessage
				if json.Unmarshal(w.payload, &e) == nil && e.Seq != nil && *e.Seq == seq {
					st.Rejected = e.Error
					return nil, nil
				}
			}
		}
	}
}

func waitOnline(ctx context.Context, in <-chan inbound, statusTopic string, limit time.Duration) error {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return fmt.Errorf("testbed: the daemon's status on %s did not say online within %v", statusTopic, limit)
		case w := <-in:
			if w.topic != statusTopic {
				continue
			}
			var s wire.Status
			if json.Unmarshal(w.payload, &s) == nil && (s.State == wire.StateOnline || s.State == wire.StateDegraded) {
				return nil
			}
		}
	}
}

func nanIfNull(f wire.Float) float64 { return float64(f) }

func (s *TestbedSummary) fill(steps []TestbedStep, plant sim.Summary) {
	s.Steps = len(steps)
	s.Plant = plant
	s.Violations = plant.Violations
	var lat []float64
	for _, st := range steps {
		s.DroppedActions += st.Dropped
		switch {
		case st.Action != nil:
			s.ActionsReceived++
			lat = append(lat, st.Latency.Seconds())
			switch st.Action.Status {
			case "fallback":
				s.Fallbacks++
			case "optimal":
				s.Optimal++
			case "gap":
				s.Gap++
			}
		case st.Rejected != "":
			s.Rejected++
			s.MissedPeriods++
		default:
			s.MissedPeriods++
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.LatencyP50 = pct(lat, 0.5)
		s.LatencyP99 = pct(lat, 0.99)
		s.LatencyMax = lat[len(lat)-1]
	}
}

// pct is the q-quantile of sorted xs (nearest rank).
func pct(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}

// WriteText prints the summary for a terminal: the loop's own figures, then the plant's.
func (s *TestbedSummary) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "MQTT closed loop: %d periods of %.3g s\n"+
		"  actions received  %d (optimal %d, gap %d, fallback %d)\n"+
		"  missed periods    %d (rejected %d, actions dropped by the plant rule %d)\n"+
		"  level violations  %d\n"+
		"  round trip        p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		s.Steps, s.PeriodSeconds, s.ActionsReceived, s.Optimal, s.Gap, s.Fallbacks,
		s.MissedPeriods, s.Rejected, s.DroppedActions, s.Violations, s.LatencyP50*1e3, s.LatencyP99*1e3, s.LatencyMax*1e3)
	if err != nil {
		return err
	}
	return s.Plant.WriteText(w)
}

// randomHex is n random bytes in hex, for client ids.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// relaxationOf is the simulator's record of an action's "relaxed" object (nil: none).
func relaxationOf(r *wire.Relaxed) *mpc.Relaxation {
	if r == nil {
		return nil
	}
	return &mpc.Relaxation{Limit: r.Limit, Bound: r.Bound, Unit: r.Unit, MaxViolation: r.MaxViolation,
		FirstStep: r.FirstStep, WorstStep: r.WorstStep, Unserved: r.Unserved, UnservedUnit: r.UnservedUnit,
		Proof: r.Proof, ProofDetail: r.ProofDetail, Shortfall: r.Shortfall}
}

// sleepCtx waits d, or until ctx ends, whose error it then returns; it returns nil at once when
// d ≤ 0.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
