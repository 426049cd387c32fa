package testbed

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap"

	"gbdmpc/internal/promtext"
	"gbdmpc/plant/sim"
)

// LoadOptions configure RunLoad: one `gbdmpc serve` process with N simulated pump stations on an
// external broker, for each N in turn, while junk floods one plant's measurement topic.
type LoadOptions struct {
	// BrokerURL is the external broker (tcp://127.0.0.1:1883, say); required.
	BrokerURL string
	// Plants are the numbers of pump stations to run (default 1, 4, 16, 64).
	Plants []int
	// Period is every plant's control period (default 1s); Deadline its deadline (default period/2).
	Period, Deadline time.Duration
	// Synchronized makes every plant sample at the same instant of each period, so that each
	// period is one burst of N measurements that must all be answered within the deadline. By
	// default the plants' sampling instants are spread evenly over the period (plant i of N at
	// i·period/N), as independent plants' clocks are.
	Synchronized bool
	// SameHours starts every simulated plant at the same hour of its day, so that all of them meet
	// the day's hard steps (a pump handed over as demand rises) in the same periods, as plants
	// sharing one tariff change would. By default plant i of N starts at hour 24·i/N.
	SameHours bool
	// Steps is how many periods each plant runs per N (default 30).
	Steps int
	// Flood publishes junk on the first plant's measurement topic at FloodRate (QoS 1, at most
	// FloodWindow unacknowledged) for the whole run.
	Flood       bool
	FloodWindow int // default 200
	// FloodRate caps the junk at this many messages a second (0: as fast as the broker takes them).
	// On a machine shared with the broker and the load generator an uncapped flood takes whatever
	// CPU they leave (15–19 thousand messages a second on 2 cores with mosquitto's Nagle off, about
	// a core), so its figures measure the flooder as much as the daemon.
	FloodRate float64
	// Daemon starts `gbdmpc serve --config path` (the command wires the running binary in).
	Daemon func(configPath string) *exec.Cmd
	// Start starts the daemon's command (nil: cmd.Start). The CLI's --generator-nice passes one that
	// forks it from a thread at the caller's own priority.
	Start func(*exec.Cmd) error
	// Dir receives the configurations and daemon logs (default: a temporary directory, removed).
	Dir string
	// Logger receives progress (nil: no-op).
	Logger *zap.Logger
}

// WarmUp is the number of each plant's first periods that the warm columns of a LoadRow leave out:
// a freshly started daemon's plants solve them without carried cuts of their own, all in the same
// seconds.
const WarmUp = 2

// LoadRow is one N's figures. Times are seconds.
type LoadRow struct {
	Plants       int `json:"plants"`
	Measurements int `json:"measurements"`
	// OnTime are actions the plants applied (plant rule: unexpired, answering the latest
	// measurement, epoch not lower than seen) before their period ended; Missed the periods
	// without one.
	OnTime         int     `json:"actions_on_time"`
	Missed         int     `json:"missed"`
	DeadlineMisses float64 `json:"daemon_deadline_misses"`
	// Gap and Fallbacks count the applied actions by status (the rest are optimal).
	Gap          int     `json:"gap"`
	Fallbacks    int     `json:"fallbacks"`
	SolveP50     float64 `json:"solve_seconds_p50"`
	SolveP99     float64 `json:"solve_seconds_p99"`
	OverheadP99  float64 `json:"loop_overhead_seconds_p99"` // from the daemon's histogram (bucket-interpolated)
	RoundTripP99 float64 `json:"round_trip_seconds_p99"`    // measurement published → action received
	// WarmRoundTripP99 and WarmOverheadP99 leave out each plant's first WarmUp periods, in which
	// every plant of a freshly started daemon solves without carried cuts of its own: the steady
	// state. The overhead here is the plant's view, round trip minus solve (broker transit included).
	WarmRoundTripP99 float64 `json:"warm_round_trip_seconds_p99"`
	WarmOverheadP99  float64 `json:"warm_overhead_seconds_p99"`
	RSSBytes         int64   `json:"rss_bytes"` // the daemon's resident set at the end
	PeakRSSBytes     int64   `json:"peak_rss_bytes"`
	CPUCores         float64 `json:"cpu_cores"` // the daemon's CPU time over the run's wall time
	// CPUPeak is the daemon's CPU over its busiest second of the run (sampled each second): a
	// daemon the cores limit reaches their number there while its queue builds.
	CPUPeak    float64 `json:"cpu_cores_peak"`
	FloodSent  int     `json:"flood_sent"`
	FloodRate  float64 `json:"flood_per_second"`
	Rejected   float64 `json:"daemon_rejected"` // measurements judged invalid on arrival
	Suppressed float64 `json:"daemon_errors_suppressed"`
	Seconds    float64 `json:"seconds"`
}

// LoadReport is a finished load test.
type LoadReport struct {
	BrokerURL string  `json:"broker_url"`
	Period    float64 `json:"period_seconds"`
	Deadline  float64 `json:"deadline_seconds"`
	Steps     int     `json:"steps"`
	Flood     bool    `json:"flood"`
	// Synchronized: every plant sampled at the same instant of the period (one burst a period).
	Synchronized bool `json:"synchronized"`
	SameHours    bool `json:"same_hours"`
	// FloodRate is the flood's cap in messages a second (0: uncapped).
	FloodRate float64   `json:"flood_rate_cap,omitempty"`
	Rows      []LoadRow `json:"rows"`
}

// RunLoad runs the load test for each N and reports a row per N. A failure of one N (the daemon
// does not start, say) ends the run with the rows so far.
func RunLoad(ctx context.Context, o LoadOptions) (*LoadReport, error) {
	if o.BrokerURL == "" {
		return nil, errors.New("loadtest: no broker URL")
	}
	if o.Daemon == nil {
		return nil, errors.New("loadtest: no way to start the daemon")
	}
	if len(o.Plants) == 0 {
		o.Plants = []int{1, 4, 16, 64}
	}
	if o.Period <= 0 {
		o.Period = time.Second
	}
	if o.Deadline <= 0 {
		o.Deadline = o.Period / 2
	}
	if o.Steps <= 0 {
		o.Steps = 30
	}
	if o.FloodWindow <= 0 {
		o.FloodWindow = 200
	}
	o.Logger = cmp.Or(o.Logger, zap.NewNop())
	cleanup, err := scratchDir(&o.Dir, "gbdmpc-load-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	rep := &LoadReport{BrokerURL: o.BrokerURL, Period: o.Period.Seconds(), Deadline: o.Deadline.Seconds(), Steps: o.Steps, Flood: o.Flood,
		Synchronized: o.Synchronized, SameHours: o.SameHours, FloodRate: o.FloodRate}
	for _, n := range o.Plants {
		if n < 1 {
			return rep, fmt.Errorf("loadtest: %d plants", n)
		}
		row, err := loadOnce(ctx, &o, n)
		if err != nil {
			return rep, fmt.Errorf("loadtest: %d plants: %w", n, err)
		}
		rep.Rows = append(rep.Rows, row)
	}
	return rep, nil
}

func loadOnce(ctx context.Context, o *LoadOptions, n int) (LoadRow, error) {
	row := LoadRow{Plants: n}
	httpAddr, err := freeLoopback()
	if err != nil {
		return row, err
	}
	cfgPath := filepath.Join(o.Dir, fmt.Sprintf("load-%d.yaml", n))
	if err := os.WriteFile(cfgPath, loadConfig(o, n, httpAddr), 0o600); err != nil {
		return row, err
	}
	logPath := filepath.Join(o.Dir, fmt.Sprintf("load-%d.log", n))
	logf, err := os.Create(logPath)
	if err != nil {
		return row, err
	}
	defer logf.Close()
	cmd := o.Daemon(cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "WATCHDOG_USEC=")
	start := o.Start
	if start == nil {
		start = (*exec.Cmd).Start
	}
	if err := start(cmd); err != nil {
		return row, fmt.Errorf("start daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	defer stop()
	if err := waitReady(ctx, httpAddr, exited, 30*time.Second); err != nil {
		return row, fmt.Errorf("%w (log: %s)", err, logPath)
	}
	o.Logger.Info("loadtest: daemon ready", zap.Int("plants", n))

	fctx, stopFlood := context.WithCancel(ctx)
	var floodSent int
	var floodErr error
	var wg sync.WaitGroup
	if o.Flood {
		wg.Add(1)
		go func() {
			defer wg.Done()
			floodSent, floodErr = flood(fctx, o.BrokerURL, "gbdmpc/p1/measurement", o.FloodWindow, o.FloodRate)
		}()
	}
	cpu0, _ := procCPU(cmd.Process.Pid)
	t0 := time.Now()
	peakDone := make(chan float64, 1)
	pctx, stopPeak := context.WithCancel(ctx)
	go func() { peakDone <- peakCPU(pctx, cmd.Process.Pid, time.Second) }()
	results := make([]*TestbedResult, n)
	errs := make([]error, n)
	var pw sync.WaitGroup
	for i := range n {
		pw.Add(1)
		var phase time.Duration
		if !o.Synchronized {
			phase = o.Period * time.Duration(i) / time.Duration(n)
		}
		go func() {
			defer pw.Done()
			cfg := sim.DefaultConfig()
			cfg.Seed = uint64(i + 1)
			if !o.SameHours {
				cfg.StartHour = 24 * float64(i) / float64(n)
			}
			results[i], errs[i] = RunTestbed(ctx, TestbedOptions{BrokerURL: o.BrokerURL, PlantID: fmt.Sprintf("p%d", i+1),
				ClientID: fmt.Sprintf("gbdmpc-load-plant-%d-%s", i+1, randomHex(3)), Sim: cfg, Steps: o.Steps, Period: o.Period,
				Phase: phase, WaitOnline: 30 * time.Second})
		}()
	}
	pw.Wait()
	wall := time.Since(t0)
	cpu1, _ := procCPU(cmd.Process.Pid)
	stopPeak()
	row.CPUPeak = <-peakDone
	stopFlood()
	wg.Wait()
	row.Seconds = wall.Seconds()
	row.CPUCores = (cpu1 - cpu0) / wall.Seconds()
	row.RSSBytes, row.PeakRSSBytes = procRSS(cmd.Process.Pid)
	row.FloodSent, row.FloodRate = floodSent, float64(floodSent)/wall.Seconds()
	if err := errors.Join(errs...); err != nil {
		return row, err
	}
	if floodErr != nil {
		return row, fmt.Errorf("flood: %w", floodErr)
	}
	var solve, rtt, warmRTT, warmOverhead []float64
	for _, r := range results {
		for _, st := range r.Steps {
			row.Measurements++
			if st.Action == nil {
				row.Missed++
				continue
			}
			row.OnTime++
			switch st.Action.Status {
			case "fallback":
				row.Fallbacks++
			case "gap":
				row.Gap++
			}
			solve = append(solve, st.Action.SolveSeconds)
			rtt = append(rtt, st.Latency.Seconds())
			if st.Seq > WarmUp {
				warmRTT = append(warmRTT, st.Latency.Seconds())
				warmOverhead = append(warmOverhead, st.Latency.Seconds()-st.Action.SolveSeconds)
			}
		}
	}
	slices.Sort(solve)
	slices.Sort(rtt)
	slices.Sort(warmRTT)
	slices.Sort(warmOverhead)
	if len(solve) > 0 {
		row.SolveP50, row.SolveP99, row.RoundTripP99 = pct(solve, 0.5), pct(solve, 0.99), pct(rtt, 0.99)
	}
	if len(warmRTT) > 0 {
		row.WarmRoundTripP99, row.WarmOverheadP99 = pct(warmRTT, 0.99), pct(warmOverhead, 0.99)
	}
	m, err := promtext.Scrape(httpAddr)
	if err != nil {
		return row, err
	}
	row.OverheadP99 = m.Quantile("gbdmpc_controller_loop_overhead_seconds", 0.99)
	row.DeadlineMisses = m.Sum("gbdmpc_controller_deadline_misses_total")
	row.Rejected = m.Sum("gbdmpc_controller_rejected_total") - m.SumLabel("gbdmpc_controller_rejected_total", `reason="deadline"`) -
		m.SumLabel("gbdmpc_controller_rejected_total", `reason="step"`)
	row.Suppressed = m.Sum("gbdmpc_controller_errors_suppressed_total")
	return row, nil
}

// loadConfig is the daemon's configuration for n pump stations p1…pn.
func loadConfig(o *LoadOptions, n int, httpAddr string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "broker:\n  url: %s\n  client_id: gbdmpc-load-%s\n  max_reconnect_interval: 1s\nhttp:\n  listen: %q\nlog:\n  level: warn\npolicy_watch: 0s\nplants:\n",
		o.BrokerURL, randomHex(3), httpAddr)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: p%d\n    family: pumpstation\n    period: %s\n    deadline: %s\n", i, o.Period, o.Deadline)
	}
	return []byte(b.String())
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls /readyz until it answers 200.
func waitReady(ctx context.Context, addr string, exited <-chan error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon not ready within %v", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-exited:
			return fmt.Errorf("daemon exited: %v", err)
		case <-tick.C:
		}
	}
}

// flood publishes junk on topic at QoS 1, at most rate a second (0: as fast as the broker
// acknowledges it) and at most window unacknowledged, until ctx ends, and reports how many were
// acknowledged.
func flood(ctx context.Context, url, topic string, window int, rate float64) (int, error) {
	c := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(url).SetClientID("gbdmpc-load-flood-" + randomHex(3)).SetCleanSession(true))
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		return 0, fmt.Errorf("connect: %v", tok.Error())
	}
	defer c.Disconnect(100)
	sent := 0
	toks := make([]mqtt.Token, 0, window)
	start := time.Now()
	for k := 0; ; k++ {
		if ctx.Err() != nil {
			return sent, nil
		}
		if rate > 0 {
			// Message k goes out no earlier than k/rate after the start.
			if sleepCtx(ctx, time.Until(start.Add(time.Duration(float64(k)/rate*float64(time.Second))))) != nil {
				return sent, nil
			}
		}
		toks = append(toks, c.Publish(topic, 1, false, fmt.Appendf(nil, `{"v":1,"seq":"junk-%d"}`, k)))
		if len(toks) == window {
			for _, t := range toks {
				if t.WaitTimeout(10*time.Second) && t.Error() == nil {
					sent++
				}
			}
			toks = toks[:0]
		}
	}
}

// peakCPU samples pid's CPU time every interval until ctx ends and returns its largest rate, in
// cores. Each sample is bracketed by clock readings and a window's rate is taken over the longest
// interval its two samples can span, so that a sampler the machine delays (the load rig runs at a
// lower priority with --generator-nice) can understate the peak but never overstate it.
func peakCPU(ctx context.Context, pid int, interval time.Duration) float64 {
	t := time.NewTicker(interval)
	defer t.Stop()
	sample := func() (before, after time.Time, cpu float64, err error) {
		before = time.Now()
		cpu, err = procCPU(pid)
		return before, time.Now(), cpu, err
	}
	prevBefore, _, prev, err := sample()
	if err != nil {
		return 0
	}
	peak := 0.0
	for {
		select {
		case <-ctx.Done():
			return peak
		case <-t.C:
			before, after, c, err := sample()
			if err != nil {
				return peak
			}
			if dt := after.Sub(prevBefore).Seconds(); dt > 0 {
				peak = max(peak, (c-prev)/dt)
			}
			prev, prevBefore = c, before
		}
	}
}

// procCPU is a process's user+system CPU time in seconds (/proc/PID/stat; Linux reports it in
// USER_HZ = 100 ticks per second).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields count from after its closing parenthesis.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil
}

// procRSS is a process's resident set and its peak (/proc/PID/status VmRSS, VmHWM), -1 if unknown.
func procRSS(pid int) (rss, peak int64) {
	rss, peak = -1, -1
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	return
}

// WriteText prints the report as a table.
func (r *LoadReport) WriteText(w io.Writer) error {
	var b strings.Builder
	flood := "no flood"
	if r.Flood {
		flood = "junk flooding p1's measurement topic at full speed"
		if r.FloodRate > 0 {
			flood = fmt.Sprintf("junk flooding p1's measurement topic at up to %.0f/s", r.FloodRate)
		}
	}
	phases := "sampling instants spread over the period"
	if r.Synchronized {
		phases = "all plants sampling at the same instant"
	}
	if r.SameHours {
		phases += ", every plant's day from the same hour"
	} else {
		phases += ", plant i's day from hour 24i/N"
	}
	fmt.Fprintf(&b, "load: pump stations in one daemon, period %.3gs, deadline %.3gs, %d periods each, %s, broker %s, %s\n",
		r.Period, r.Deadline, r.Steps, phases, r.BrokerURL, flood)
	fmt.Fprintf(&b, "%6s %8s %8s %5s %6s %6s %5s %9s %9s %10s %9s %9s %9s %8s %8s %5s %6s %8s %9s\n", "plants", "measured", "on-time",
		"(gap", "fallbk)", "missed", "late", "solve-p50", "solve-p99", "overhd-p99", "rtt-p99", "w-ovh-p99", "w-rtt-p99",
		"rss-MiB", "peak-MiB", "cpu", "cpu-1s", "flood/s", "rejected")
	for _, x := range r.Rows {
		fmt.Fprintf(&b, "%6d %8d %8d %5d %6d %6d %5.0f %7.1fms %7.1fms %8.2fms %7.1fms %7.1fms %7.1fms %8.1f %8.1f %5.2f %6.2f %8.0f %9.0f\n", x.Plants,
			x.Measurements, x.OnTime, x.Gap, x.Fallbacks, x.Missed, x.DeadlineMisses, x.SolveP50*1e3, x.SolveP99*1e3, x.OverheadP99*1e3,
			x.RoundTripP99*1e3, x.WarmOverheadP99*1e3, x.WarmRoundTripP99*1e3, float64(x.RSSBytes)/(1<<20), float64(x.PeakRSSBytes)/(1<<20),
			x.CPUCores, x.CPUPeak, x.FloodRate, x.Rejected)
	}
	fmt.Fprintf(&b, "on-time: actions applied by the plant rule before the period ended; late: the daemon's deadline misses\n"+
		"(withheld actions); overhead: receipt to publish minus the solve (bucketed); w-: after each plant's first %d periods\n"+
		"(the steady state; w-ovh is round trip minus solve); cpu, rss: the daemon process alone (cpu-1s: its busiest second)\n", WarmUp)
	_, err := io.WriteString(w, b.String())
	return err
}
