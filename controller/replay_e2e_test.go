package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/plant/synthesis"
	"gbdmpc/policy"
	"gbdmpc/replay"
	"gbdmpc/wire"
)

// loopStats sum the agent fields of a run's actions.
type loopStats struct {
	actions, proposed, accepted, fallbacks int
	// withheld are steps that overran their deadline (a loaded machine): no action, an error.
	withheld int
	versions map[string]int
}

func (s loopStats) acceptance() float64 {
	if s.proposed == 0 {
		return 0
	}
	return float64(s.accepted) / float64(s.proposed)
}

func (s loopStats) String() string {
	return fmt.Sprintf("%d actions (%d fallbacks, %d withheld past the deadline), agent accepted %d of %d proposals (%.1f%%), versions %v",
		s.actions, s.fallbacks, s.withheld, s.accepted, s.proposed, 100*s.acceptance(), s.versions)
}

// closeLoop sends each instance as the next measurement and waits for its action: the plant of the
// synthesis family is the sequence of parameter sets.
func closeLoop(t *testing.T, d *testDaemon, plant string, seq *uint64, instances []synthesis.Instance) loopStats {
	t.Helper()
	st := loopStats{versions: map[string]int{}}
	for _, in := range instances {
		*seq++
		d.publish(plant, synthesisMeasurement(*seq, time.Now(), in))
		a, ok := d.expectAnswer(plant, *seq)
		if !ok {
			st.withheld++
			continue
		}
		st.actions++
		st.versions[a.PolicyVersion]++
		if a.Status == mpc.StatusFallback {
			st.fallbacks++
		}
		if a.Agent != nil {
			st.proposed += a.Agent.Proposed
			st.accepted += a.Agent.Accepted
		}
	}
	return st
}

// sampleInstances draws feasible parameter sets only: an infeasible one ends in a fallback after the
// whole deadline, which would make the test slow and says nothing about the agent.
func sampleInstances(seed uint64, n int) []synthesis.Instance {
	rng := rand.New(rand.NewPCG(seed, 0x6532))
	out := make([]synthesis.Instance, n)
	for i := range out {
		out[i] = synthesis.SampleFeasible(rng)
	}
	return out
}

// The learning loop end to end, over MQTT: a daemon runs the synthesis family on a weak policy with
// its decision log on; replay retrains from scratch on that log; on a fresh daemon and fresh
// measurements, the weak policy runs first, then the retrained file is renamed over the configured
// path, the watch swaps it in, and the same measurements run again. The retrained policy must have
// its proposals accepted more often.
func TestReplayRetrainHotReloadEndToEnd(t *testing.T) {
	testsupport.Long(t, "trains two policies and runs a few hundred solves")
	const n = 120
	tmp := t.TempDir()
	policyPath := filepath.Join(tmp, "synthesis.gbdp")
	logDir := filepath.Join(tmp, "decisions")
	if err := os.Mkdir(logDir, 0o755); err != nil {
		t.Fatal(err)
	}

	// The weak policy: one epoch per stage on 20 expert masters.
	ds := synthesisDataset(t, 4, 21)
	if len(ds.Samples) < 20 {
		t.Fatalf("only %d expert samples", len(ds.Samples))
	}
	ds.Samples = ds.Samples[:20]
	weak, err := policy.Train(context.Background(), ds, policy.TrainConfig{Arch: tinyArch, Seed: 3,
		Stage1: policy.StageConfig{Epochs: 1}, Stage2: policy.StageConfig{Epochs: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := weak.Save(policyPath); err != nil {
		t.Fatal(err)
	}
	plant := configs.Plant{ID: "syn", Family: "synthesis", Period: 2 * time.Second, Deadline: time.Second,
		MaxAge: 5 * time.Second, Policy: policyPath}

	// 1. The closed loop on the weak policy, logged.
	cfg := testsupport.EmbeddedConfig(plant)
	cfg.DecisionLog.Dir = logDir
	d := startDaemon(t, cfg, Deps{})
	var seq uint64
	logged := closeLoop(t, d, "syn", &seq, sampleInstances(1, n))
	d.stop() // closes the decision log, so everything is on disk
	t.Logf("logged run, weak %s: %v", weak.Version(), logged)

	// 2. Replay: retrain from scratch on the log (the gate is reported, not required: what matters
	// here is the closed loop below).
	newPath := filepath.Join(tmp, "retrained.gbdp")
	var out strings.Builder
	rep, err := replay.Run(context.Background(), replay.Config{
		Logs: []string{logDir}, Families: registry.Default, OldPolicy: policyPath, Out: newPath, Force: true,
		Retrain: replay.RetrainConfig{FromScratch: true, Train: policy.TrainConfig{Seed: 7,
			Stage1: policy.StageConfig{Epochs: 20}, Stage2: policy.StageConfig{Epochs: 20}}},
		Log: &out,
	})
	if err != nil && !errors.Is(err, replay.ErrRefused) {
		t.Fatalf("replay: %v\n%s", err, out.String())
	}
	t.Logf("replay:\n%s", out.String())
	if rep.Replay.Masters == 0 || rep.Written != newPath {
		t.Fatalf("replay learned from %d masters and wrote %q", rep.Replay.Masters, rep.Written)
	}
	retrained, err := policy.Load(newPath)
	if err != nil {
		t.Fatal(err)
	}
	newFile, err := os.ReadFile(newPath)
	if err != nil {
		t.Fatal(err)
	}

	// 3. A fresh daemon on the weak policy, fresh measurements; then the retrained file deployed by
	// rename and picked up by the watch, and the same measurements again.
	ticks := make(chan time.Time)
	d2 := startDaemon(t, testsupport.EmbeddedConfig(plant), Deps{PolicyWatchTicks: ticks})
	seq = 0
	fresh := sampleInstances(2, n)
	before := closeLoop(t, d2, "syn", &seq, fresh)
	replaceFile(t, policyPath, newFile)
	poll(t, ticks)
	d2.expect(d2.topic("syn", "status"), 10*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"policy_version":"`+retrained.Version()+`"`)
	})
	after := closeLoop(t, d2, "syn", &seq, fresh)
	if v := d2.counter("gbdmpc_controller_policy_info", "plant", "syn", "version", retrained.Version()); v != 1 {
		t.Errorf("policy_info{version=%s} = %v, want 1", retrained.Version(), v)
	}
	d2.stop()

	t.Logf("fresh measurements, weak %s:      %v", weak.Version(), before)
	t.Logf("fresh measurements, retrained %s: %v", retrained.Version(), after)
	if before.versions[weak.Version()]+before.withheld != n || after.versions[retrained.Version()]+after.withheld != n {
		t.Errorf("actions by policy version: before the swap %v, after %v; want all %d on %s then on %s",
			before.versions, after.versions, n, weak.Version(), retrained.Version())
	}
	if after.proposed == 0 || after.acceptance() <= before.acceptance() {
		t.Errorf("acceptance %.3f (%d/%d) after retraining, not above the weak policy's %.3f (%d/%d)",
			after.acceptance(), after.accepted, after.proposed, before.acceptance(), before.accepted, before.proposed)
	}
}

// expectAnswer waits for measurement mseq's action, or for its "deadline" error (a step that
// overran on a loaded machine is withheld, never published late): ok is false then.
func (d *testDaemon) expectAnswer(plant string, mseq uint64) (a wire.Action, ok bool) {
	d.t.Helper()
	m := d.expect("", 10*time.Second, func(m received) bool {
		switch m.topic {
		case d.topic(plant, "action"):
			var x wire.Action
			return json.Unmarshal(m.payload, &x) == nil && x.MeasurementSeq == mseq
		case d.topic(plant, "error"):
			var e wire.ErrorMessage
			return json.Unmarshal(m.payload, &e) == nil && e.Seq != nil && *e.Seq == mseq && e.Reason == wire.ReasonDeadline
		}
		return false
	})
	if m.topic != d.topic(plant, "action") {
		return wire.Action{}, false
	}
	if err := json.Unmarshal(m.payload, &a); err != nil {
		d.t.Fatal(err)
	}
	return a, true
}
