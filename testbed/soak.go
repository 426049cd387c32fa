package testbed

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/plant/synthesis"
	"gbdmpc/wire"
)

// SoakOptions configure RunSoak: the daemon and a plant in one process, for many accelerated steps,
// to show that nothing grows (goroutines, open files, memory) while the loop runs.
type SoakOptions struct {
	// Steps is how many measurements the plant publishes (at least 1).
	Steps int
	// Family is "synthesis" (default: seeded synthesis.SampleFeasible parameter sets, the fastest
	// solves) or "pumpstation" (the simulated pump station of RunTestbed).
	Family string
	// Period is the plant's control period as the daemon is configured with it (deadline = period/2).
	// Synthesis measurements go out back to back, the next as soon as the previous one's action
	// arrived, so Period only sets the deadline (default 2s). The pump station's testbed keeps its
	// cadence at Period (default 250ms).
	Period time.Duration
	// WarmUp is how many steps run before the baseline sample that growth is measured from (default
	// Steps/10, at most 200): caches, pools and the decision log's first segment fill up first.
	WarmUp int
	// Samples is how many evenly spaced samples to take between the baseline and the end (default 10).
	Samples int
	// Seed seeds the synthesis measurements and the pump station's disturbances (default 1).
	Seed uint64
	// DecisionDir receives the decision log ("" : a temporary directory, removed afterwards).
	DecisionDir string
	// Logger receives the daemon's log (nil: no-op).
	Logger *zap.Logger
	// OnStep, if set, is called after every step with the number of steps done.
	OnStep func(done int)
}

// ProcStats is one sample of the process's resources. Memory is sampled after a forced collection
// that returns freed memory to the OS, so that RSS follows what is live rather than the collector's
// pacing.
type ProcStats struct {
	Step       int    `json:"step"`
	RSSBytes   int64  `json:"rss_bytes"`
	HeapBytes  uint64 `json:"heap_inuse_bytes"`
	Goroutines int    `json:"goroutines"`
	OpenFiles  int    `json:"open_files"`
}

// SoakReport is a finished soak: the process at start (daemon up, plant connected), after the
// warm-up, along the run and at the end, and what the loop did.
type SoakReport struct {
	Family          string        `json:"family"`
	Steps           int           `json:"steps"`
	Duration        time.Duration `json:"-"`
	Seconds         float64       `json:"duration_seconds"` // Duration, for JSON
	Start           ProcStats     `json:"start"`
	Baseline        ProcStats     `json:"baseline"` // after WarmUp steps
	End             ProcStats     `json:"end"`
	Stopped         ProcStats     `json:"stopped"` // after the daemon returned
	Samples         []ProcStats   `json:"samples"`
	ActionsReceived int           `json:"actions_received"`
	Missed          int           `json:"missed"` // steps without an action before the plant gave up waiting
	Optimal         float64       `json:"optimal"`
	Gap             float64       `json:"gap"`
	Fallbacks       float64       `json:"fallbacks"`
	DeadlineMisses  float64       `json:"deadline_misses"`
	Rejected        float64       `json:"rejected"`
	MailboxDropped  float64       `json:"mailbox_dropped"`
	DecisionRecords float64       `json:"decisionlog_records"`
	DecisionDropped float64       `json:"decisionlog_dropped"`
	DecisionErrors  float64       `json:"decisionlog_write_errors"`
}

// SampleProc reads this process's resident set (/proc/self/statm), open descriptors (/proc/self/fd),
// goroutines and heap in use. Linux only: elsewhere RSS and open files are -1.
func SampleProc(step int) ProcStats {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := ProcStats{Step: step, RSSBytes: -1, OpenFiles: -1, HeapBytes: ms.HeapInuse, Goroutines: runtime.NumGoroutine()}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				s.RSSBytes = pages * int64(os.Getpagesize())
			}
		}
	}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		s.OpenFiles = len(ents) - 1 // ReadDir's own descriptor
	}
	return s
}

// soakNotifier keeps a soak away from systemd even when it runs under it.
type soakNotifier struct{}

func (soakNotifier) Notify(string) error { return nil }

// RunSoak starts the daemon (Run with an embedded broker on a free loopback port and a decision
// log) and a plant in this process, runs Steps closed-loop steps, and reports the process's
// resources along the way and the loop's counters.
func RunSoak(ctx context.Context, o SoakOptions) (SoakReport, error) {
	if o.Steps < 1 {
		return SoakReport{}, fmt.Errorf("soak: need at least one step, got %d", o.Steps)
	}
	if o.Family == "" {
		o.Family = "synthesis"
	}
	if o.Family != "synthesis" && o.Family != "pumpstation" {
		return SoakReport{}, fmt.Errorf("soak: family %q: want synthesis or pumpstation", o.Family)
	}
	if o.Period <= 0 {
		o.Period = 2 * time.Second
		if o.Family == "pumpstation" {
			o.Period = 250 * time.Millisecond
		}
	}
	if o.WarmUp <= 0 {
		o.WarmUp = min(o.Steps/10, 200)
	}
	o.WarmUp = min(o.WarmUp, o.Steps)
	if o.Samples <= 0 {
		o.Samples = 10
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	o.Logger = cmp.Or(o.Logger, zap.NewNop())
	cleanup, err := scratchDir(&o.DecisionDir, "gbdmpc-soak-")
	if err != nil {
		return SoakReport{}, err
	}
	defer cleanup()
	rep := SoakReport{Family: o.Family, Steps: o.Steps}

	const plantID = "soak"
	cfg := &configs.Config{
		Broker:      configs.Broker{Embedded: true, Listen: "127.0.0.1:0", ClientID: "gbdmpc-soak-" + randomHex(3), MaxReconnectInterval: time.Second},
		HTTP:        configs.HTTP{Listen: configs.HTTPOff},
		DecisionLog: configs.DecisionLog{Dir: o.DecisionDir},
		// max_age is generous: a soak measures growth, not clock skew, and a slow CI machine may
		// queue a measurement for a while behind a long solve.
		Plants: []configs.Plant{{ID: plantID, Family: o.Family, Period: o.Period, MaxAge: max(o.Period, 10*time.Second)}},
	}
	cfg.ApplyDefaults()
	reg := prometheus.NewRegistry()
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	started := make(chan controller.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(dctx, cfg, controller.Deps{Logger: o.Logger, Registry: reg, Notifier: soakNotifier{}, Version: "soak",
			Started: func(i controller.Info) { started <- i }})
	}()
	var info controller.Info
	select {
	case info = <-started:
	case err := <-done:
		return rep, fmt.Errorf("soak: daemon did not start: %w", err)
	case <-time.After(30 * time.Second):
		stop()
		<-done
		return rep, errors.New("soak: daemon not ready within 30s")
	case <-ctx.Done():
		stop()
		<-done
		return rep, ctx.Err()
	}
	// The daemon stops on every way out; its error wins over the plant's only if the plant's is nil.
	stopDaemon := func() error {
		stop()
		return <-done
	}

	samples := func(k int) {
		if k == o.WarmUp {
			rep.Baseline = SampleProc(k)
		}
		if k == o.Steps {
			// Before the plant disconnects, so that End and Baseline count the same clients.
			rep.End = SampleProc(k)
		} else if every := max(1, (o.Steps-o.WarmUp)/o.Samples); k > o.WarmUp && (k-o.WarmUp)%every == 0 {
			rep.Samples = append(rep.Samples, SampleProc(k))
		}
		if o.OnStep != nil {
			o.OnStep(k)
		}
	}
	t0 := time.Now()
	var perr error
	switch o.Family {
	case "synthesis":
		perr = soakSynthesis(ctx, info.BrokerURL, cfg, plantID, &o, &rep, samples)
	case "pumpstation":
		perr = soakPumpStation(ctx, info.BrokerURL, plantID, &o, &rep, samples)
	}
	rep.Duration = time.Since(t0)
	rep.Seconds = rep.Duration.Seconds()
	if rep.Baseline.Step == 0 {
		rep.Baseline = rep.Start
	}
	if rep.End.Step == 0 { // the plant stopped early
		rep.End = SampleProc(o.Steps)
	}
	derr := stopDaemon()
	rep.Stopped = SampleProc(o.Steps)
	rep.fillCounters(reg)
	if perr != nil {
		return rep, perr
	}
	if derr != nil {
		return rep, fmt.Errorf("soak: daemon: %w", derr)
	}
	return rep, nil
}

// soakSynthesis publishes seeded feasible synthesis parameter sets back to back and waits for each
// one's action (or error) before the next, so the daemon runs as fast as it solves.
func soakSynthesis(ctx context.Context, url string, cfg *configs.Config, plantID string, o *SoakOptions, rep *SoakReport, step func(int)) error {
	// Only stale answers can be waiting when the buffer is full: the plant reads while it waits.
	box := newInbox(64, nil)
	in := box.ch
	topic := func(kind string) string { return cfg.Topic(plantID, kind) }
	onConnect, subscribed := subscribeOnConnect(map[string]byte{topic("action"): 1, topic("error"): 0}, box.recv)
	opts := mqtt.NewClientOptions().AddBroker(url).SetClientID("gbdmpc-soak-plant-" + randomHex(3)).
		SetCleanSession(true).SetAutoReconnect(true).SetConnectTimeout(5 * time.Second).
		SetOnConnectHandler(onConnect)
	client := mqtt.NewClient(opts)
	if tok := client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		return fmt.Errorf("soak: plant connect: %v", tok.Error())
	}
	defer func() {
		client.Disconnect(100)
		box.close()
	}()
	select {
	case <-subscribed:
	case <-time.After(10 * time.Second):
		return errors.New("soak: plant not subscribed within 10s")
	}
	rep.Start = SampleProc(0)
	if o.WarmUp == 0 {
		rep.Baseline = rep.Start
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x5eed))
	wait := cfg.Plants[0].Deadline + 5*time.Second
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for k := 1; k <= o.Steps; k++ {
		seq := uint64(k)
		s := synthesis.SampleFeasible(rng)
		payload, _ := wire.Measurement(seq, time.Now().UnixMilli(), s) // an Instance always marshals
		if tok := client.Publish(topic("measurement"), 1, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			return fmt.Errorf("soak: publish seq %d: %v", seq, tok.Error())
		}
		timer.Reset(wait)
	await:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C:
				rep.Missed++
				break await
			case w := <-in:
				var hdr struct {
					MeasurementSeq uint64  `json:"measurement_seq"`
					Seq            *uint64 `json:"seq"`
				}
				if json.Unmarshal(w.payload, &hdr) != nil {
					continue
				}
				if w.topic == topic("action") && hdr.MeasurementSeq == seq {
					rep.ActionsReceived++
					break await
				}
				if w.topic == topic("error") && hdr.Seq != nil && *hdr.Seq == seq {
					rep.Missed++
					break await
				}
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		step(k)
	}
	return nil
}

// soakPumpStation runs the MQTT testbed (the simulated pump station) at the soak's period.
func soakPumpStation(ctx context.Context, url, plantID string, o *SoakOptions, rep *SoakReport, step func(int)) error {
	rep.Start = SampleProc(0)
	if o.WarmUp == 0 {
		rep.Baseline = rep.Start
	}
	k := 0
	res, err := RunTestbed(ctx, TestbedOptions{BrokerURL: url, PlantID: plantID, Steps: o.Steps, Period: o.Period,
		WaitOnline: 10 * time.Second, Logger: o.Logger,
		OnStep: func(TestbedStep) { k++; step(k) }})
	if res != nil {
		rep.ActionsReceived = res.Summary.ActionsReceived
		rep.Missed = res.Summary.MissedPeriods
		if res.Run == nil { // stopped early: count what the steps say
			rep.ActionsReceived, rep.Missed = 0, 0
			for _, st := range res.Steps {
				if st.Action != nil {
					rep.ActionsReceived++
				} else {
					rep.Missed++
				}
			}
		}
	}
	return err
}

// fillCounters copies the daemon's own account of the run from its registry.
func (r *SoakReport) fillCounters(reg *prometheus.Registry) {
	sum := func(name string, match func(labels map[string]string) bool) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			return -1
		}
		total := 0.0
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, lp := range m.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				if match != nil && !match(labels) {
					continue
				}
				switch {
				case m.Counter != nil:
					total += m.Counter.GetValue()
				case m.Gauge != nil:
					total += m.Gauge.GetValue()
				}
			}
		}
		return total
	}
	status := func(s string) func(map[string]string) bool {
		return func(l map[string]string) bool { return l["status"] == s }
	}
	r.Optimal = sum("gbdmpc_controller_actions_total", status("optimal"))
	r.Gap = sum("gbdmpc_controller_actions_total", status("gap"))
	r.Fallbacks = sum("gbdmpc_controller_fallbacks_total", nil)
	r.DeadlineMisses = sum("gbdmpc_controller_deadline_misses_total", nil)
	r.Rejected = sum("gbdmpc_controller_rejected_total", nil)
	r.MailboxDropped = sum("gbdmpc_controller_mailbox_dropped_total", nil)
	r.DecisionRecords = sum("gbdmpc_decisionlog_records_total", nil)
	r.DecisionDropped = sum("gbdmpc_decisionlog_dropped_total", nil)
	r.DecisionErrors = sum("gbdmpc_decisionlog_write_errors_total", nil)
}

// WriteText prints the report for a terminal.
func (r *SoakReport) WriteText(w io.Writer) error {
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	row := func(name string, s ProcStats) string {
		return fmt.Sprintf("  %-9s step %6d  rss %7.1f MiB  heap %7.1f MiB  goroutines %4d  fds %4d\n",
			name, s.Step, mb(s.RSSBytes), mb(int64(s.HeapBytes)), s.Goroutines, s.OpenFiles)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %s, %d steps in %v (%.1f steps/s)\n", r.Family, r.Steps, r.Duration.Round(time.Millisecond),
		float64(r.Steps)/max(r.Duration.Seconds(), 1e-9))
	b.WriteString(row("start", r.Start))
	b.WriteString(row("baseline", r.Baseline))
	for _, s := range r.Samples {
		b.WriteString(row("", s))
	}
	b.WriteString(row("end", r.End))
	b.WriteString(row("stopped", r.Stopped))
	fmt.Fprintf(&b, "  growth    rss %+.1f MiB, goroutines %+d, fds %+d (baseline → end)\n",
		mb(r.End.RSSBytes-r.Baseline.RSSBytes), r.End.Goroutines-r.Baseline.Goroutines, r.End.OpenFiles-r.Baseline.OpenFiles)
	fmt.Fprintf(&b, "  actions   %d received, %d missed (optimal %.0f, gap %.0f, fallbacks %.0f), deadline misses %.0f, rejected %.0f, mailbox dropped %.0f\n",
		r.ActionsReceived, r.Missed, r.Optimal, r.Gap, r.Fallbacks, r.DeadlineMisses, r.Rejected, r.MailboxDropped)
	fmt.Fprintf(&b, "  decisions %.0f records written, %.0f dropped, %.0f write errors\n", r.DecisionRecords, r.DecisionDropped, r.DecisionErrors)
	_, err := io.WriteString(w, b.String())
	return err
}

// scratchDir points *dir at a new temporary directory (named after pattern) when it is empty, and
// returns what removes that directory again (nothing for a directory the caller gave).
func scratchDir(dir *string, pattern string) (cleanup func(), err error) {
	if *dir != "" {
		return func() {}, nil
	}
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, err
	}
	*dir = d
	return func() { os.RemoveAll(d) }, nil
}
