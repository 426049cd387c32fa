package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/internal/par"
	"gbdmpc/mpc"
	"gbdmpc/plant/registry"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// Sampler draws one instance (a measurement payload of the family) from rng; the plant registry
// makes them (registry.SamplerFor).
type Sampler = registry.Sampler

// DatagenConfig configures expert-data generation (the paper's protocol, specs/synthesis.md).
type DatagenConfig struct {
	Family mpc.Family
	Sample Sampler
	Sets   int    // parameter sets (feasible ones; infeasible draws are skipped and redrawn)
	Seed   uint64 // instance sampling
	// Starts is how many initial assignments y⁰ to run GBD from on each set: 0 means every one of
	// Y_pb (the paper's protocol for synthesis); fewer are drawn without replacement.
	Starts int
	// Workers solve sets in parallel (0: GOMAXPROCS); the data do not depend on it.
	Workers int
	// NewNLP makes each worker's NLP back-end (nil: gbd.NewNLP); Settings for GBD (zero:
	// defaults).
	NewNLP   func() nlp.Solver
	Settings gbd.Settings
	// Progress, when set, is called after each feasible set with the number done and samples so far
	// (from the worker goroutines, one call at a time).
	Progress func(done, total, samples int)
}

// DatagenStats summarize a run.
type DatagenStats struct {
	Sets, Runs, Samples, WithFeasCuts, Skipped int
	MeanIterations                             float64
}

// Datagen runs classical GBD with the exact (enumeration) master from several initial assignments
// on each parameter set and records every master problem it solves, labelled with the master's exact
// optimum (the expert's decision). Sets whose MINLP is infeasible are skipped, as the paper's
// "feasible parameter sets" were.
func Datagen(ctx context.Context, cfg DatagenConfig) (*policy.Dataset, DatagenStats, error) {
	if cfg.Family == nil || cfg.Sample == nil || cfg.Sets <= 0 {
		return nil, DatagenStats{}, fmt.Errorf("datagen: need a family, a sampler and a positive number of sets")
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ypb := cfg.Family.Admissible()
	if ypb.Implicit() {
		return nil, DatagenStats{}, fmt.Errorf("datagen: Y_pb of %d binaries is too large to enumerate, and datagen draws its GBD starts from the enumerated set: make this size's data from closed-loop decision logs with replay", ypb.NY)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x64617461))
	type job struct {
		set     int
		payload []byte
		starts  []int
	}
	type out struct {
		set     int
		samples []policy.Sample
		runs    int
		iters   int
		skipped bool
		err     error
	}
	draw := func(set int) job {
		j := job{set: set, payload: cfg.Sample(rng)}
		n := ypb.Count()
		if cfg.Starts <= 0 || cfg.Starts >= n {
			j.starts = make([]int, n)
			for i := range j.starts {
				j.starts[i] = i
			}
		} else {
			j.starts = rng.Perm(n)[:cfg.Starts]
		}
		return j
	}
	ds := &policy.Dataset{Family: cfg.Family.Name(), Ypb: ypb}
	st := DatagenStats{}
	taken, issued := 0, 0
	var progressMu sync.Mutex
	done, nsamples := 0, 0
	// Rounds: draw as many sets as are still needed, solve them in parallel, take the feasible ones in
	// draw order; infeasible draws are replaced in the next round. Deterministic for a seed.
	for taken < cfg.Sets {
		batch := make([]job, cfg.Sets-taken)
		for i := range batch {
			batch[i] = draw(issued)
			issued++
		}
		res := make([]out, len(batch))
		err := par.Each(ctx, len(batch), workers, func() func(int) {
			solver := newNLP(cfg.NewNLP)
			return func(i int) {
				j := batch[i]
				o := out{set: j.set}
				o.samples, o.runs, o.iters, o.skipped, o.err = runSet(cfg, solver, ypb, j.set, j.payload, j.starts)
				res[i] = o
				if cfg.Progress != nil && !o.skipped && o.err == nil {
					progressMu.Lock()
					done++
					nsamples += len(o.samples)
					cfg.Progress(min(done, cfg.Sets), cfg.Sets, nsamples)
					progressMu.Unlock()
				}
			}
		})
		if err != nil {
			return nil, st, err
		}
		for _, o := range res {
			if o.err != nil {
				return nil, st, fmt.Errorf("datagen: set %d: %w", o.set, o.err)
			}
			if o.skipped {
				st.Skipped++
				continue
			}
			for i := range o.samples {
				o.samples[i].Set = taken
			}
			ds.Samples = append(ds.Samples, o.samples...)
			st.Runs += o.runs
			st.MeanIterations += float64(o.iters)
			taken++
		}
	}
	st.Sets = taken
	st.Samples = len(ds.Samples)
	if st.Runs > 0 {
		st.MeanIterations /= float64(st.Runs)
	}
	for i := range ds.Samples {
		for _, c := range ds.Samples[i].Cuts {
			if c.Kind == gbd.FeasibilityCut {
				st.WithFeasCuts++
				break
			}
		}
	}
	return ds, st, nil
}

// sampleRecorder turns every master problem GBD solves into an expert sample: the master goes
// through the decision log's codec (telemetry.MasterRecordOf), exactly as the daemon logs it, and
// is labelled by the labeller replay uses (policy.Labeller), so a datagen sample and a replayed one
// are made the same way.
type sampleRecorder struct {
	ypb     *gbd.Admissible
	hinges  *gbd.Hinges // the problem's (the engine's cuts carry them when its master takes them)
	solve   int         // the GBD solve the next masters belong to (one per start)
	lb      policy.Labeller
	samples []policy.Sample
}

func (r *sampleRecorder) RecordMaster(v *gbd.MasterView, it *gbd.Iteration) {
	rec := telemetry.MasterRecordOf(v, it, nil)
	cuts := rec.GBDCuts(false, r.hinges)
	label, _, ok := r.lb.Label(r.solve, cuts, r.ypb)
	if !ok {
		return // the feasibility cuts exclude every assignment: the solve ends here
	}
	r.samples = append(r.samples, policy.Sample{Cuts: cuts, Prev: rec.Prev, Label: label})
}

func runSet(cfg DatagenConfig, solver nlp.Solver, ypb *gbd.Admissible, set int, payload []byte, starts []int) (samples []policy.Sample, runs, iters int, skipped bool, err error) {
	m, err := cfg.Family.DecodeMeasurement(payload)
	if err != nil {
		return nil, 0, 0, false, err
	}
	p, err := m.Problem()
	if err != nil {
		return nil, 0, 0, false, err
	}
	rec := &sampleRecorder{ypb: ypb}
	if p.Validate() == nil { // (the engine reports an invalid problem below)
		rec.hinges = gbd.FindHinges(p, ypb.Stages)
	}
	e := gbd.Engine{NLP: solver, Master: &enum.Master{}, Recorder: rec}
	y0 := make([]float64, ypb.NY)
	for _, j := range starts {
		set := cfg.Settings
		set.Y0 = ypb.Float(j, y0)
		rec.solve++
		r, err := e.Solve(p, ypb, set)
		if err != nil {
			return nil, 0, 0, false, err
		}
		if r.Status == gbd.StatusInfeasible {
			return nil, 0, 0, true, nil
		}
		if r.Status != gbd.StatusOptimal {
			return nil, 0, 0, false, fmt.Errorf("GBD from y0=%v ended %s: %s", y0, r.Status, r.Message)
		}
		runs++
		iters += r.Iterations
	}
	return rec.samples, runs, iters, false, nil
}

// newNLP is one back-end from the factory, or gbd's default.
func newNLP(f func() nlp.Solver) nlp.Solver {
	if f == nil {
		return gbd.NewNLP()
	}
	return f()
}
