package controller

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"gbdmpc/internal/promtext"
	"gbdmpc/internal/testsupport"
	"gbdmpc/plant/synthesis"
	"gbdmpc/telemetry"
	"gbdmpc/wire"
)

// daemonProc is `gbdmpc serve` as a child process, its log in a file.
type daemonProc struct {
	cmd  *exec.Cmd
	done chan error
	log  string
}

func startDaemonProc(t *testing.T, bin, config, logFile string) *daemonProc {
	t.Helper()
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &daemonProc{cmd: exec.Command(bin, "serve", "--config", config), done: make(chan error, 1), log: logFile}
	p.cmd.Stdout, p.cmd.Stderr = f, f // files: exec starts no copying goroutine
	p.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "WATCHDOG_USEC=")
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start daemon: %v", err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p
}

// writeDaemonConfig writes a daemon's config file and returns the path of its log file beside it,
// whose start the test's log shows if the test fails.
func writeDaemonConfig(t *testing.T, config, body string) (logFile string) {
	t.Helper()
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile = filepath.Join(filepath.Dir(config), "daemon.log")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("daemon log:\n%.20000s", b)
		}
	})
	return logFile
}

// actionSeqs watches a plant's action and status topics from outside the daemon.
type actionWatch struct {
	mu      sync.Mutex
	seqs    []uint64
	mseqs   []uint64
	status  chan string
	client  mqtt.Client
	actions chan struct{}
}

func watchActions(t *testing.T, url, prefix, plant string) *actionWatch {
	t.Helper()
	w := &actionWatch{status: make(chan string, 64), actions: make(chan struct{}, 1)}
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID("watch-" + randomHex(3)).SetCleanSession(true).
		SetAutoReconnect(true).SetOrderMatters(true)
	w.client = subscribedClient(t, o, map[string]byte{prefix + "/" + plant + "/action": 1, prefix + "/" + plant + "/status": 1},
		func(_ mqtt.Client, m mqtt.Message) {
			if strings.HasSuffix(m.Topic(), "/status") {
				var s wire.Status
				if json.Unmarshal(m.Payload(), &s) == nil {
					select {
					case w.status <- s.State:
					default:
					}
				}
				return
			}
			var a wire.Action
			if json.Unmarshal(m.Payload(), &a) == nil {
				w.mu.Lock()
				w.seqs, w.mseqs = append(w.seqs, a.Seq), append(w.mseqs, a.MeasurementSeq)
				w.mu.Unlock()
			}
		}, "action watcher")
	return w
}

func (w *actionWatch) waitState(t *testing.T, state string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case s := <-w.status:
			if s == state {
				return
			}
		case <-deadline:
			t.Fatalf("status %q not seen within %v", state, timeout)
		}
	}
}

func (w *actionWatch) snapshot() (seqs, mseqs []uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]uint64(nil), w.seqs...), append([]uint64(nil), w.mseqs...)
}

// TestFaultKillRestart: `gbdmpc serve` is SIGKILLed in the middle of a solve and restarted on the
// same decision-log directory, with a torn line appended to the log in between as a crash inside a
// write would leave it. After the restart the loop continues; every complete record of both runs is
// readable, and no action seq seen on the action topic repeats.
func TestFaultKillRestart(t *testing.T) {
	testsupport.Long(t, "builds the daemon and runs it twice")
	broker := testsupport.StartMosquitto(t)
	defer broker.Kill()
	bin := testsupport.BuildDaemon(t)
	dir := t.TempDir()
	decisions := filepath.Join(dir, "decisions")
	config := filepath.Join(dir, "config.yaml")
	body := fmt.Sprintf(`broker:
  url: %s
  client_id: gbdmpc-kill
  max_reconnect_interval: 200ms
http:
  listen: "off"
log:
  level: info
decision_log:
  dir: %s
  fsync: interval
  fsync_every: 50ms
policy_watch: 0s
plants:
  - id: s1
    family: synthesis
    period: 8s
    deadline: 6s
    max_age: 30s
`, broker.URL(), decisions)
	logFile := writeDaemonConfig(t, config, body)

	watch := watchActions(t, broker.URL(), "gbdmpc", "s1")
	defer watch.client.Disconnect(50)
	plant := newSynthClient(t, broker.URL(), "gbdmpc", "s1")
	defer plant.c.Disconnect(50)
	rng := rand.New(rand.NewPCG(21, 8))

	first := startDaemonProc(t, bin, config, logFile)
	watch.waitState(t, wire.StateOnline, 30*time.Second)
	seq := uint64(0)
	for range 10 {
		seq++
		if a, _ := plant.step(seq, synthesis.SampleFeasible(rng), 15*time.Second); a == nil {
			t.Fatalf("first run: no action for seq %d", seq)
		}
	}
	// Mid-run: a measurement is in the daemon's hands (probably mid-solve) when it dies.
	seq++
	payload, _ := json.Marshal(map[string]any{"v": 1, "seq": seq, "ts_ms": time.Now().UnixMilli(), "gamma": []float64{10, 20, 15, 12, 4}, "U": 10, "rho": []float64{1.5, 0.5}})
	plant.c.Publish("gbdmpc/s1/measurement", 1, false, payload).WaitTimeout(5 * time.Second)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-first.done; err == nil {
		t.Fatal("the killed daemon exited cleanly")
	}
	watch.waitState(t, wire.StateOffline, 30*time.Second) // the broker published the Last Will

	// A crash inside a write leaves a partial last line; the restart must repair it.
	segs, err := telemetry.SegmentFiles(decisions)
	if err != nil || len(segs) == 0 {
		t.Fatalf("no decision-log segments after the first run: %v", err)
	}
	last := segs[len(segs)-1]
	if !strings.HasSuffix(last, ".gz") {
		f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString(`{"v":1,"type":"master","ts_ms":1,"pla`)
		f.Close()
	}

	second := startDaemonProc(t, bin, config, logFile)
	stopped := false
	defer func() {
		if !stopped {
			_ = second.cmd.Process.Kill()
			<-second.done
		}
	}()
	watch.waitState(t, wire.StateOnline, 30*time.Second)
	for range 10 {
		seq++
		if a, _ := plant.step(seq, synthesis.SampleFeasible(rng), 15*time.Second); a == nil {
			t.Fatalf("after the restart: no action for seq %d", seq)
		}
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-second.done; err != nil {
		t.Errorf("the restarted daemon did not stop cleanly on SIGTERM: %v", err)
	}
	stopped = true
	watch.waitState(t, wire.StateOffline, 10*time.Second) // its own graceful offline

	// Every complete record of both runs reads back and validates; the torn line is gone.
	r, err := telemetry.NewReader(decisions)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.ReadAll(telemetry.Filter{})
	torn := r.Torn()
	r.Close()
	if err != nil {
		t.Fatalf("decision log after kill and restart: %v (read %d records)", err, len(recs))
	}
	// Solve records by daemon run (the solve id's first field) and measurement seq.
	runs := map[string][]uint64{}
	for i, rec := range recs {
		if err := rec.Validate(); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		run := strings.SplitN(rec.SolveID, "-", 2)[0]
		if rec.Type == telemetry.TypeSolve {
			runs[run] = append(runs[run], rec.Step)
		} else if _, ok := runs[run]; !ok {
			runs[run] = nil
		}
	}
	t.Logf("decision log: %d records, solve records by run %v, %d torn lines skipped by the reader", len(recs), runs, torn)
	// The restarted daemon stopped on SIGTERM: every step it acknowledged (12–21) has its record.
	// The killed one loses what its writer had not written when it died — the newest records, the
	// queue's tail, more of them on a loaded machine (CI: 2) — but never one before a record that
	// was written: its solves are 1..k (and 11, the measurement in hand at the kill, only after 10).
	var restarted, killed []uint64
	for _, steps := range runs {
		if slices.Contains(steps, 12) {
			restarted = steps
		} else {
			killed = steps
		}
	}
	// (11, the measurement in hand at the kill, may be redelivered to it by the broker instead.)
	want := []uint64{12, 13, 14, 15, 16, 17, 18, 19, 20, 21}
	if got := slices.DeleteFunc(slices.Sorted(slices.Values(restarted)), func(s uint64) bool { return s == 11 }); !slices.Equal(got, want) {
		t.Errorf("the restarted daemon's solve records are for steps %v, want %v", got, want)
	}
	if len(runs) > 2 {
		t.Errorf("records from %d daemon runs, want 2", len(runs))
	}
	killedSorted := slices.Sorted(slices.Values(killed))
	for i, step := range killedSorted {
		if step != uint64(i+1) {
			t.Errorf("the killed daemon's solve records are for steps %v: a gap before the newest", killedSorted)
			break
		}
	}
	if len(killed) == 0 || len(recs) == 0 {
		dumpDecisionDir(t, decisions) // say where the killed run's records went, if it left none
	}
	t.Logf("the killed daemon's writer had written the records of %d of its 10 acknowledged steps", len(killed))
	if matches, _ := filepath.Glob(filepath.Join(decisions, "*.torn-*")); len(matches) == 0 {
		t.Errorf("no .torn-* copy: the torn line was not repaired by Open")
	}

	// Action seqs: the contract's "seq" identifies an action; a plant de-duplicating on it must never
	// see one twice, across restarts included.
	seqs, mseqs := watch.snapshot()
	seen := map[uint64]int{}
	var dups []string
	for i, s := range seqs {
		if j, ok := seen[s]; ok {
			dups = append(dups, fmt.Sprintf("seq %d for measurements %d and %d", s, mseqs[j], mseqs[i]))
		}
		seen[s] = i
	}
	if len(dups) > 0 {
		t.Errorf("%d repeated action seqs after the restart, e.g. %s", len(dups), dups[0])
	}
}

// gone waits until no process pid exists (the daemon reaped it), up to timeout: the state of
// another process has no event to wait on.
func gone(pid int, timeout time.Duration) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	end := time.After(timeout)
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return true
		}
		select {
		case <-tick.C:
		case <-end:
			return false
		}
	}
}

// TestFaultKillCBCWorker: under `gbdmpc serve` with the cbc master, whose solves run in a worker
// process, the worker is killed from outside as CBC's own crashes would kill it (SIGSEGV) while
// idle, and stopped (a hang) while a solve waits on it. The daemon survives both; the hung solve is
// ended by killing its worker at its time limit plus cbc.OverrunGrace, inside the deadline, so the
// plant gets an action for that measurement too; every later measurement is solved by a fresh
// worker; the metrics count what happened; no worker outlives the daemon.
func TestFaultKillCBCWorker(t *testing.T) {
	testsupport.Long(t, "builds the daemon and kills its CBC worker")
	broker := testsupport.StartMosquitto(t)
	defer broker.Kill()
	bin := testsupport.BuildDaemon(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	httpAddr := fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	body := fmt.Sprintf(`broker:
  url: %s
  client_id: gbdmpc-cbc-kill
  max_reconnect_interval: 200ms
http:
  listen: %s
log:
  level: info
decision_log:
  dir: %s
policy_watch: 0s
plants:
  - id: s1
    family: synthesis
    master: cbc
    period: 4s
    deadline: 2s
    max_age: 30s
`, broker.URL(), httpAddr, filepath.Join(dir, "decisions"))
	logFile := writeDaemonConfig(t, config, body)
	watch := watchActions(t, broker.URL(), "gbdmpc", "s1")
	defer watch.client.Disconnect(50)
	plant := newSynthClient(t, broker.URL(), "gbdmpc", "s1")
	defer plant.c.Disconnect(50)
	d := startDaemonProc(t, bin, config, logFile)
	defer func() { _ = d.cmd.Process.Kill() }()
	watch.waitState(t, wire.StateOnline, 30*time.Second)
	pid := d.cmd.Process.Pid
	in := synthesis.SampleFeasible(rand.New(rand.NewPCG(5, 1)))
	seq := uint64(0)
	step := func(want ...string) *wire.Action {
		t.Helper()
		seq++
		a, _ := plant.step(seq, in, 10*time.Second)
		if a == nil {
			t.Fatalf("no action for measurement %d", seq)
		}
		if !slices.Contains(want, a.Status) {
			t.Fatalf("measurement %d: action %s (%q), want one of %v", seq, a.Status, a.Reason, want)
		}
		return a
	}
	oneWorker := func() int {
		t.Helper()
		ws := testsupport.CBCWorkers(pid)
		if len(ws) != 1 {
			t.Fatalf("%d CBC workers under the daemon, want 1", len(ws))
		}
		return ws[0]
	}
	var workers []int

	step("optimal")
	w := oneWorker()
	workers = append(workers, w)
	// An idle worker dies as a crash inside CBC would end it: the next solve starts a fresh one.
	if err := syscall.Kill(w, syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	if !gone(w, 10*time.Second) {
		t.Fatal("the killed worker was not reaped")
	}
	step("optimal")
	if w2 := oneWorker(); w2 == w {
		t.Fatal("the dead worker is still listed")
	} else {
		w = w2
		workers = append(workers, w)
	}
	// A worker that stops answering (a hang): the solve waiting on it is ended at its limit plus
	// the grace, inside the deadline, and the plant gets what the solve had.
	if err := syscall.Kill(w, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	a := step("gap", "fallback")
	t.Logf("the hung solve: %s in %.3f s: %s", a.Status, a.SolveSeconds, a.Reason)
	if !strings.Contains(a.Reason, "worker process") || !strings.Contains(a.Reason, "past its time limit") {
		t.Errorf("the hung solve's action says %q", a.Reason)
	}
	if a.SolveSeconds > 2 {
		t.Errorf("the hung solve took %.3f s, past the 2 s deadline", a.SolveSeconds)
	}
	if !gone(w, 10*time.Second) {
		t.Fatal("the hung worker was not killed")
	}
	step("optimal")
	workers = append(workers, oneWorker())

	m, err := promtext.Scrape(httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, label string
		want        float64
	}{
		{"gbdmpc_cbc_worker_failures_total", `reason="overrun"`, 1},
		{"gbdmpc_cbc_worker_failures_total", `reason="crashed"`, 0},
		{"gbdmpc_cbc_workers", "", 1},
		{"gbdmpc_cbc_workers_started_total", "", 3},
	} {
		if got := m.SumLabel(c.name, c.label); got != c.want {
			t.Errorf("%s{%s} = %g, want %g", c.name, c.label, got, c.want)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-d.done; err != nil {
		t.Errorf("daemon did not stop cleanly: %v", err)
	}
	for _, w := range workers {
		if !gone(w, 10*time.Second) {
			t.Errorf("worker %d outlived the daemon", w)
		}
	}
}

// dumpDecisionDir logs every file of a decision-log directory with its size, its line count and
// the start of its first and last lines, for a failure that must be diagnosed from CI's output.
func dumpDecisionDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Logf("decision directory: %v", err)
		return
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Logf("%s: %v", e.Name(), err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		head := func(s string) string { return s[:min(len(s), 160)] }
		t.Logf("%s: %d bytes, %d lines, ends in a newline: %v\n  first: %s\n  last:  %s", e.Name(), len(b), len(lines),
			strings.HasSuffix(string(b), "\n"), head(lines[0]), head(lines[len(lines)-1]))
	}
}
