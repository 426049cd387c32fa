package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
	"gbdmpc/telemetry"
)

var epoch = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

func newFakeClock() *fakeclock.Clock { return fakeclock.New(epoch) }

// tick moves c one second on and reads it: log records one second apart.
func tick(c *fakeclock.Clock) time.Time {
	c.Advance(time.Second)
	return c.Now()
}

// logRecorder is the test's gbd.Recorder → telemetry.Record converter, written the way the daemon's
// is (controller/recorder.go, which is not exported): everything the record points to is copied.
type logRecorder struct {
	sink   interface{ Write(*telemetry.Record) bool }
	clock  *fakeclock.Clock
	plant  string
	family string

	solveID  string
	step     uint64
	version  string
	instance json.RawMessage

	// labels are Index(MasterY) of every optimal master, as logged, for the tests to compare with.
	labels []int
}

func (r *logRecorder) header(typ string) *telemetry.Record {
	return &telemetry.Record{V: telemetry.SchemaVersion, Type: typ, TSms: tick(r.clock).UnixMilli(),
		Plant: r.plant, Family: r.family, SolveID: r.solveID, Step: r.step, PolicyVersion: r.version}
}

func (r *logRecorder) RecordMaster(view *gbd.MasterView, it *gbd.Iteration) {
	if it.Master == gbd.MasterOptimal {
		r.labels = append(r.labels, view.Ypb.Index(it.MasterY))
	}
	rec := r.header(telemetry.TypeMaster)
	rec.Master = telemetry.MasterRecordOf(view, it, r.instance)
	r.sink.Write(rec)
}

func (r *logRecorder) finish(res *gbd.Result) {
	s := &telemetry.SolveRecord{Status: res.Status.String(), Y: slices.Clone(res.Y), Objective: telemetry.Num(res.Objective),
		LBD: telemetry.Num(res.LBD), UBD: telemetry.Num(res.UBD), Iterations: res.Iterations,
		MasterSeconds: res.MasterTime.Seconds(), SubproblemSeconds: res.SubproblemTime.Seconds(),
		TotalSeconds: res.Total.Seconds(), Instance: r.instance, Message: res.Message}
	rec := r.header(telemetry.TypeSolve)
	rec.Solve = s
	r.sink.Write(rec)
}

// logSpec describes a decision log to produce by running GBD.
type logSpec struct {
	plant     string
	family    mpc.Family
	instances [][]byte // measurement payloads, one solve per instance and start
	starts    int      // solves per instance, from the first `starts` assignments of Y_pb
	policy    gbd.Policy
	version   string
	// carry starts every solve of an instance after its first with the cuts the previous one ended
	// with, as the daemon carries cuts between steps (valid here because the instance is the same).
	carry bool
}

// pumpInstances samples n instances of the spec's pump station, encoded as its measurements are.
func pumpInstances(tb testing.TB, seed uint64, n int) (mpc.Family, [][]byte) {
	cfg := pumpstation.DefaultConfig()
	fam, err := pumpstation.NewFamily(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	prof := pumpstation.DefaultProfile()
	rng := rand.New(rand.NewPCG(seed, 2))
	var ins [][]byte
	for range n {
		ins = append(ins, pumpstation.MarshalInstance(pumpstation.Sample(rng, &cfg, &prof)))
	}
	return fam, ins
}

// synthesisInstances draws n synthesis parameter sets, feasible or not (infeasible ones give
// masters whose feasibility cuts exclude everything).
func synthesisInstances(seed uint64, n int, feasibleOnly bool) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([][]byte, n)
	for i := range out {
		in := synthesis.Sample(rng)
		if feasibleOnly {
			in = synthesis.SampleFeasible(rng)
		}
		out[i] = synthesis.MarshalInstance(in)
	}
	return out
}

// runInto solves every instance of spec with the enum master and records into sink. It returns the
// labels the engine logged, in log order.
func runInto(t testing.TB, sink interface{ Write(*telemetry.Record) bool }, clock *fakeclock.Clock, spec logSpec) []int {
	t.Helper()
	rec := &logRecorder{sink: sink, clock: clock, plant: spec.plant, family: spec.family.Name(), version: spec.version}
	ypb := spec.family.Admissible()
	eng := gbd.Engine{Master: &enum.Master{}, Policy: spec.policy, Recorder: rec}
	starts := max(spec.starts, 1)
	n := 0
	for i, payload := range spec.instances {
		m, err := spec.family.DecodeMeasurement(payload)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		p, err := m.Problem()
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		var prev []gbd.Cut
		for s := 0; s < starts; s++ {
			n++
			rec.solveID, rec.step, rec.instance = fmt.Sprintf("%s-%d", spec.plant, n), uint64(n), m.Instance()
			set := gbd.Settings{Y0: ypb.Float(s%ypb.Count(), make([]float64, ypb.NY))}
			if spec.carry {
				set.Cuts = prev
			}
			res, err := eng.Solve(p, ypb, set)
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			rec.finish(res)
			prev = res.Cuts
		}
	}
	return rec.labels
}

// openLog opens a decision log in dir that never drops: the tests count every record.
func openLog(t testing.TB, dir string, clock *fakeclock.Clock, opt telemetry.LogOptions) *telemetry.DecisionLog {
	t.Helper()
	opt.QueueSize = 1 << 20
	if opt.Fsync == 0 {
		opt.Fsync = telemetry.FsyncNever
	}
	l, err := telemetry.Open(dir, opt, nil, clock)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func closeLog(t testing.TB, l *telemetry.DecisionLog) {
	t.Helper()
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.Dropped() != 0 || l.Rejected() != 0 || l.WriteErrors() != 0 {
		t.Fatalf("decision log lost records: dropped %d, rejected %d, write errors %d", l.Dropped(), l.Rejected(), l.WriteErrors())
	}
}

// writeLog writes one log of the given specs into dir and returns the logged labels of each spec.
func writeLog(t testing.TB, dir string, opt telemetry.LogOptions, specs ...logSpec) (labels [][]int, records uint64) {
	t.Helper()
	clock := newFakeClock()
	l := openLog(t, dir, clock, opt)
	for _, s := range specs {
		labels = append(labels, runInto(t, l, clock, s))
	}
	closeLog(t, l)
	return labels, l.Records()
}

func synthesisFamily() mpc.Family { return synthesis.NewFamily() }
