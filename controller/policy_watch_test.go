package controller

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/experiment"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/plant/synthesis"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// tinyArch keeps the agents these tests train to a fraction of a second. The binary index lets a
// network trained on a few dozen masters tell the binaries apart.
var tinyArch = policy.Arch{ECC: []int{16, 16}, Dense: []int{16}, VarIndex: true}

func synthesisPayload(rng *rand.Rand) []byte { return synthesis.MarshalInstance(synthesis.Sample(rng)) }

// synthesisDataset is expert data for the synthesis family: classical GBD from a few starts on a few
// seeded parameter sets, every master labelled with its exact optimum.
func synthesisDataset(t testing.TB, sets int, seed uint64) *policy.Dataset {
	t.Helper()
	ds, _, err := experiment.Datagen(context.Background(), experiment.DatagenConfig{
		Family: synthesis.NewFamily(), Sample: synthesisPayload, Sets: sets, Seed: seed, Starts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// trainTiny trains one epoch per stage: enough for a valid, distinct (by seed) policy.
func trainTiny(t testing.TB, ds *policy.Dataset, seed uint64) *policy.Agent {
	t.Helper()
	a, err := policy.Train(context.Background(), ds, policy.TrainConfig{Arch: tinyArch, Seed: seed,
		Stage1: policy.StageConfig{Epochs: 1}, Stage2: policy.StageConfig{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// replaceFile writes data over path the way a deploy should: a temporary file renamed into place.
func replaceFile(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// captureSink hands the solve records a daemon writes to the test.
type captureSink struct{ solves chan *telemetry.Record }

func newCaptureSink() *captureSink { return &captureSink{solves: make(chan *telemetry.Record, 1024)} }

func (s *captureSink) Write(r *telemetry.Record) bool {
	if r.Type != telemetry.TypeSolve {
		return true
	}
	select {
	case s.solves <- r:
		return true
	default:
		return false
	}
}

// solveRecord waits for the solve record of the measurement with seq step.
func (s *captureSink) solveRecord(t testing.TB, step uint64) *telemetry.Record {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-s.solves:
			if r.Step == step {
				return r
			}
		case <-timeout:
			t.Fatalf("no solve record for measurement %d within 10s", step)
		}
	}
}

// poll runs exactly one policy watch: the second send on the unbuffered tick channel is taken only
// once the reloader has finished the poll of the first.
func poll(t *testing.T, ticks chan time.Time) {
	t.Helper()
	for range 2 {
		select {
		case ticks <- time.Now():
		case <-time.After(20 * time.Second):
			t.Fatal("the policy watch did not take a tick within 20s")
		}
	}
}

func synthesisMeasurement(seq uint64, ts time.Time, in synthesis.Instance) []byte {
	var m map[string]any
	if err := json.Unmarshal(synthesis.MarshalInstance(in), &m); err != nil {
		panic(err)
	}
	m["seq"], m["ts_ms"] = seq, ts.UnixMilli()
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// A policy file replaced on disk is loaded, checked and swapped in between steps; its version shows
// in the actions, the decision log and policy_info. A file that does not load, or that is for another
// family, leaves the running policy in place and is counted once; a touch changes nothing.
func TestPolicyFileWatch(t *testing.T) {
	testsupport.NoLeaks(t)
	ds := synthesisDataset(t, 3, 11)
	polA, polB := trainTiny(t, ds, 1), trainTiny(t, ds, 2)
	other := *ds
	other.Family = "not-synthesis"
	polOther := trainTiny(t, &other, 1)
	if polA.Version() == polB.Version() {
		t.Fatalf("two seeds gave the same version %s", polA.Version())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "synthesis.gbdp")
	saved := func(a *policy.Agent) []byte {
		t.Helper()
		p := filepath.Join(dir, a.Version()+".gbdp")
		if err := a.Save(p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fileA, fileB, fileOther := saved(polA), saved(polB), saved(polOther)
	replaceFile(t, path, fileA)

	f := newFakeStepper(func(mpc.Measurement, time.Time) (mpc.Decision, error) {
		return mpc.Decision{Status: mpc.StatusOptimal, Apply: json.RawMessage(`{"y":[1,0,1,0,0]}`),
			Y: []float64{1, 0, 1, 0, 0}, Objective: 1, LBD: 1, UBD: 1, Iterations: 2}, nil
	})
	deps := fakeDeps(f)
	ticks := make(chan time.Time)
	deps.PolicyWatchTicks = ticks
	sink := newCaptureSink()
	deps.Decisions = sink
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "s1", Family: "synthesis", Period: 2 * time.Second, Deadline: time.Second,
		MaxAge: 5 * time.Second, Policy: path})
	d := startDaemon(t, cfg, deps)
	rng := rand.New(rand.NewPCG(5, 5))
	seq := uint64(0)
	step := func(want string) {
		t.Helper()
		seq++
		d.publish("s1", synthesisMeasurement(seq, time.Now(), synthesis.Sample(rng)))
		if a := d.expectAction("s1", seq); a.PolicyVersion != want || a.Agent == nil {
			t.Errorf("action for measurement %d: policy_version %q (agent %v), want %q", seq, a.PolicyVersion, a.Agent, want)
		}
		if r := sink.solveRecord(t, seq); r.PolicyVersion != want {
			t.Errorf("decision record of measurement %d: PolicyVersion %q, want %q", seq, r.PolicyVersion, want)
		}
	}
	info := func(version string) float64 {
		return d.counter("gbdmpc_controller_policy_info", "plant", "s1", "version", version)
	}
	const (
		reloadsOK = "gbdmpc_controller_policy_reloads_total"
		errs      = "gbdmpc_controller_policy_reload_errors_total"
	)

	step(polA.Version())
	if info(polA.Version()) != 1 {
		t.Errorf("policy_info{version=%s} = %v, want 1", polA.Version(), info(polA.Version()))
	}
	poll(t, ticks) // unchanged: nothing happens
	if n := d.counter(reloadsOK, "plant", "s1", "result", "ok"); n != 1 {
		t.Errorf("policy loads %v after an unchanged poll, want 1 (the start's)", n)
	}

	// A new policy, renamed into place.
	replaceFile(t, path, fileB)
	poll(t, ticks)
	d.expect(d.topic("s1", "status"), 10*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"policy_version":"`+polB.Version()+`"`)
	})
	step(polB.Version())
	if info(polB.Version()) != 1 || info(polA.Version()) != 0 {
		t.Errorf("policy_info: %s=%v, %s=%v; want only the new one", polB.Version(), info(polB.Version()), polA.Version(), info(polA.Version()))
	}
	f.mu.Lock()
	if a, ok := f.policy.(*policy.Agent); !ok || a.Version() != polB.Version() {
		t.Errorf("SetPolicy got %T, want the agent %s", f.policy, polB.Version())
	}
	f.mu.Unlock()

	// A touch (same content, new time) is no change.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	poll(t, ticks)
	if n := d.counter(reloadsOK, "plant", "s1", "result", "ok"); n != 2 {
		t.Errorf("policy loads %v after a touch, want 2", n)
	}

	// A corrupt file: refused, counted once however often it is polled, the old policy kept.
	replaceFile(t, path, fileA[:len(fileA)/2])
	poll(t, ticks)
	poll(t, ticks)
	if n := d.counter(errs, "plant", "s1"); n != 1 {
		t.Errorf("reload errors %v after a corrupt file, want 1", n)
	}
	step(polB.Version())

	// A valid policy for another family fails CheckFits.
	replaceFile(t, path, fileOther)
	poll(t, ticks)
	if n := d.counter(errs, "plant", "s1"); n != 2 {
		t.Errorf("reload errors %v after another family's policy, want 2", n)
	}
	step(polB.Version())
	if info(polB.Version()) != 1 {
		t.Errorf("policy_info{version=%s} = %v after refused files, want 1", polB.Version(), info(polB.Version()))
	}

	// Back to a good file: the watch recovers.
	replaceFile(t, path, fileA)
	poll(t, ticks)
	d.expect(d.topic("s1", "status"), 10*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"policy_version":"`+polA.Version()+`"`)
	})
	step(polA.Version())
	if n := d.counter(errs, "plant", "s1"); n != 2 {
		t.Errorf("reload errors %v at the end, want 2", n)
	}
	d.stop()
}

// With policy_watch set and no injected ticks the daemon polls on its own ticker.
func TestPolicyWatchTicker(t *testing.T) {
	testsupport.NoLeaks(t)
	ds := synthesisDataset(t, 2, 12)
	polA, polB := trainTiny(t, ds, 1), trainTiny(t, ds, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "synthesis.gbdp")
	if err := polA.Save(path); err != nil {
		t.Fatal(err)
	}
	f := newFakeStepper(optimalDecision)
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "s1", Family: "synthesis", Period: 2 * time.Second, Deadline: time.Second,
		MaxAge: 5 * time.Second, Policy: path})
	cfg.PolicyWatch = 10 * time.Millisecond
	d := startDaemon(t, cfg, fakeDeps(f))
	if err := polB.Save(path); err != nil { // policy's Save renames into place
		t.Fatal(err)
	}
	d.expect(d.topic("s1", "status"), 10*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"policy_version":"`+polB.Version()+`"`)
	})
	d.stop()
}

// A file renamed into place with the same size and time stamp as the old one is still a change
// (another inode); the same content under a new time stamp is not.
func TestStampFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p")
	stamp := time.Unix(1_700_000_000, 0)
	write := func(content string) {
		t.Helper()
		replaceFile(t, path, []byte(content))
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
	}
	write("aaaa")
	first := stampFile(path, fileStamp{})
	if first.err != "" {
		t.Fatal(first.err)
	}
	if again := stampFile(path, first); !again.sameContent(first) {
		t.Error("an unchanged file reads as changed")
	}
	write("bbbb")
	if st := stampFile(path, first); st.sameContent(first) {
		t.Error("a same-size, same-time file renamed into place reads as unchanged")
	}
	write("aaaa")
	later := stamp.Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if st := stampFile(path, first); !st.sameContent(first) {
		t.Error("the same content under a new time stamp reads as changed")
	}
	os.Remove(path)
	gone := stampFile(path, first)
	if gone.err == "" || !stampFile(path, gone).sameFailure(gone) {
		t.Errorf("a missing file: %+v", gone)
	}
}
