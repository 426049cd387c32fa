package pumpstation_test

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
	"gbdmpc/gbd/nlp"
	"gbdmpc/gbd/nlp/ipopt"
	"gbdmpc/internal/knob"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/sim"
)

// TestMeasureStepOverrun is a measurement, not a test of the default suite. It runs the pump station
// in closed loop in process (mpc.Controller with carried cuts and the enumeration master, as the
// daemon runs it; the simulator of plant/sim as the plant), gives every Step a deadline a fixed
// budget after the measurement, and records how late Step returns relative to that deadline and
// where the time went: the work before the engine (transcription, carried cuts), the engine's
// set-up, every Ipopt call (before its first iteration callback, its iterations, after its last
// callback), every master solve, and the work after the engine (plan).
//
//	GBDMPC_MEASURE_OVERRUN=1 go test ./plant/pumpstation -run MeasureStepOverrun -v -timeout 20m
//
// GBDMPC_MEASURE_STEPS (default 300) and GBDMPC_MEASURE_BUDGETS (default "150ms,50ms") set the run,
// after GBDMPC_MEASURE_WARMUP (default 5) unrecorded steps with a 2 s budget;
// GBDMPC_MEASURE_OUT, if set, is a directory that receives steps-<budget>.csv. GBDMPC_MEASURE_TAG
// labels the output lines (e.g. "before", "after"). Like the daemon's config, T_min and T_max are
// 1/20 and 1/5 of the budget. GBDMPC_MEASURE_SPIN=n adds n goroutines that compute in the same
// process; GBDMPC_MEASURE_DEBUG=1 prints every Ipopt call's set-up, iteration and tail
// times to stderr.
func TestMeasureStepOverrun(t *testing.T) {
	knob.Measurement(t, "GBDMPC_MEASURE_OVERRUN")
	steps := knob.Env(t, "GBDMPC_MEASURE_STEPS", 300, 1)
	budgets := knob.Durations(t, "GBDMPC_MEASURE_BUDGETS", 150*time.Millisecond, 50*time.Millisecond)
	tag := os.Getenv("GBDMPC_MEASURE_TAG")
	warmup := knob.Env(t, "GBDMPC_MEASURE_WARMUP", 5, 0)
	if s := os.Getenv("GBDMPC_MEASURE_SPIN"); s != "" {
		// In-process load: goroutines that compute, as a broker and a testbed in the same
		// process would when busy.
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			t.Fatalf("GBDMPC_MEASURE_SPIN=%q", s)
		}
		stop := make(chan struct{})
		defer close(stop)
		for range n {
			go spin(stop)
		}
	}
	for _, b := range budgets {
		recs := measureLoop(t, warmup, steps, b)
		summarizeOverrun(t, tag, b, recs)
		if dir := os.Getenv("GBDMPC_MEASURE_OUT"); dir != "" {
			writeOverrunCSV(t, filepath.Join(dir, fmt.Sprintf("steps-%s-%v.csv", tag, b)), recs)
		}
	}
}

var sink uint64

// spin computes without allocating until stop is closed: a goroutine busy in the same process,
// which holds a P (GOMAXPROCS) between the scheduler's preemptions.
func spin(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			sink = x
			return
		default:
		}
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
}

// Phases a step's time is split into.
const (
	phPre      = iota // Step start → engine start: transcription, start point, carried cuts
	phSetup           // engine start → first NLP or master call (validate, master reset, cuts, compile)
	phNLPSetup        // Ipopt call → its first iteration callback
	phNLPIter         // first → last iteration callback
	phNLPTail         // last iteration callback → the call returns
	phMaster          // master solves
	phEngine          // the engine between calls, and after the last one
	phPost            // engine end → Step returns (plan, pooling the cuts)
	numPhases
)

var phaseNames = [numPhases]string{"pre(carry)", "engine-setup", "nlp-setup", "nlp-iter", "nlp-tail", "master", "engine-other", "post(plan)"}

type interval struct {
	phase      int
	start, end time.Time
}

type stepRecord struct {
	step       int
	deadline   time.Time
	start, ret time.Time
	status     string
	iterations int
	carried    int
	nlps       int
	gcs        uint32
	gcPause    time.Duration
	alloc      uint64 // bytes allocated by the process during the step
	ivs        []interval
}

func (r *stepRecord) late() time.Duration { return r.ret.Sub(r.deadline) }

// spent is the time of each phase, all of it (after=false) or only after the deadline.
func (r *stepRecord) spent(after bool) [numPhases]time.Duration {
	var out [numPhases]time.Duration
	for _, iv := range r.ivs {
		s := iv.start
		if after && s.Before(r.deadline) {
			s = r.deadline
		}
		if d := iv.end.Sub(s); d > 0 {
			out[iv.phase] += d
		}
	}
	return out
}

// probe collects the timestamps of one step: the controller's clock readings, every NLP and master
// call. The controller runs on one goroutine, but CutPool's workers do not read the clock; the lock
// is for safety only.
type probe struct {
	mu       sync.Mutex
	readings []time.Time
	ivs      []interval
}

func (p *probe) Now() time.Time {
	t := time.Now()
	p.mu.Lock()
	p.readings = append(p.readings, t)
	p.mu.Unlock()
	return t
}

func (p *probe) add(iv interval) {
	p.mu.Lock()
	p.ivs = append(p.ivs, iv)
	p.mu.Unlock()
}

type probeNLP struct{ p *probe }

func (n probeNLP) Solve(pr *nlp.Problem, x0 []float64, opt nlp.Options) (nlp.Result, error) {
	start := time.Now()
	var first, last time.Time
	inner := opt.Stop
	debug := os.Getenv("GBDMPC_MEASURE_DEBUG") != ""
	var cbs []time.Time
	var scheds [][2]int64
	sched0 := threadSched(debug)
	opt.Stop = func() bool {
		t := time.Now()
		if first.IsZero() {
			first = t
		}
		last = t
		if debug {
			cbs = append(cbs, t)
			scheds = append(scheds, threadSched(true))
		}
		return inner != nil && inner()
	}
	defer func() {
		if !debug || len(cbs) < 2 {
			return
		}
		var d []string
		for i := 1; i < len(cbs); i++ {
			d = append(d, ms(cbs[i].Sub(cbs[i-1])))
		}
		fmt.Fprintf(os.Stderr, "nlp setup %s iters %v tail %s\n", ms(cbs[0].Sub(start)), d, ms(time.Since(cbs[len(cbs)-1])))
		// A long gap: was the thread running (cpu), waiting for a CPU on the run queue (wait),
		// or neither (asleep, e.g. waiting for a Go P, or its vCPU not running)?
		prevT, prevS := start, sched0
		for i := range cbs {
			if gap := cbs[i].Sub(prevT); gap > 5*time.Millisecond && prevS[0] >= 0 && scheds[i][0] >= 0 {
				fmt.Fprintf(os.Stderr, "gap %s ms: thread cpu %s ms, run-queue wait %s ms\n", ms(gap),
					ms(time.Duration(scheds[i][0]-prevS[0])), ms(time.Duration(scheds[i][1]-prevS[1])))
			}
			prevT, prevS = cbs[i], scheds[i]
		}
	}()
	res, err := ipopt.Solver{}.Solve(pr, x0, opt)
	end := time.Now()
	if first.IsZero() {
		n.p.add(interval{phNLPSetup, start, end})
	} else {
		n.p.add(interval{phNLPSetup, start, first})
		n.p.add(interval{phNLPIter, first, last})
		n.p.add(interval{phNLPTail, last, end})
	}
	return res, err
}

// threadSched reads the calling thread's CPU time and run-queue wait (ns) from
// /proc/thread-self/schedstat, or −1s when off or unavailable. An Ipopt callback runs on the thread
// that called Ipopt.
func threadSched(on bool) [2]int64 {
	if !on {
		return [2]int64{-1, -1}
	}
	b, err := os.ReadFile("/proc/thread-self/schedstat")
	if err != nil {
		return [2]int64{-1, -1}
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return [2]int64{-1, -1}
	}
	cpu, err1 := strconv.ParseInt(f[0], 10, 64)
	wait, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return [2]int64{-1, -1}
	}
	return [2]int64{cpu, wait}
}

type probeMaster struct {
	gbd.Master
	p *probe
}

func (m probeMaster) Solve(limit time.Duration, start []float64) (gbd.MasterResult, error) {
	t0 := time.Now()
	r, err := m.Master.Solve(limit, start)
	m.p.add(interval{phMaster, t0, time.Now()})
	return r, err
}

func measureLoop(t *testing.T, warmup, steps int, budget time.Duration) []stepRecord {
	cfg := sim.DefaultConfig()
	plant, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fam, err := pumpstation.NewFamily(cfg.Plant)
	if err != nil {
		t.Fatal(err)
	}
	pr := &probe{}
	ctrl, err := mpc.NewController(fam, mpc.Options{
		NewMaster: func() gbd.Master { return probeMaster{Master: &enum.Master{}, p: pr} },
		NLP:       probeNLP{pr},
		Clock:     pr,
		Settings:  gbd.Settings{Eps: 1e-3, EpsTol: 1e-6, TMin: budget / 20, TMax: budget / 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	pc := fam.Config()
	recs := make([]stepRecord, 0, steps)
	var ms runtime.MemStats
	for i := range warmup + steps {
		payload := plant.Measurement()
		if i < warmup {
			// Past the cold start, which needs more than a tight budget on a loaded machine (the
			// loop then stays on the safe action for a random number of periods).
			m, err := fam.DecodeMeasurement(payload)
			if err != nil {
				t.Fatal(err)
			}
			d, err := ctrl.Step(m, time.Now().Add(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			act, err := pumpstation.DecodeApply(d.Apply, &pc)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := plant.Step(act.PumpsOn, act.Flow); err != nil {
				t.Fatal(err)
			}
			continue
		}
		runtime.ReadMemStats(&ms)
		gc0, pause0, alloc0 := ms.NumGC, ms.PauseTotalNs, ms.TotalAlloc
		pr.readings, pr.ivs = pr.readings[:0], nil
		start := time.Now()
		deadline := start.Add(budget)
		m, err := fam.DecodeMeasurement(payload)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ctrl.Step(m, deadline)
		ret := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if os.Getenv("GBDMPC_MEASURE_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "step %d: %s %s carry %+v\n", len(recs), d.Status, d.Reason, d.Carry)
		}
		runtime.ReadMemStats(&ms)
		rec := stepRecord{step: len(recs), deadline: deadline, start: start, ret: ret, status: d.Status,
			iterations: d.Iterations, carried: d.Carry.Carried, gcs: ms.NumGC - gc0,
			gcPause: time.Duration(ms.PauseTotalNs - pause0), alloc: ms.TotalAlloc - alloc0}
		ivs := pr.ivs
		// Step reads its clock last for Decision.SolveSeconds; the reading before it is the engine's
		// last (Result.Total), and Total gives the engine's start.
		if d.Result != nil && len(pr.readings) >= 3 {
			engEnd := pr.readings[len(pr.readings)-2]
			engStart := engEnd.Add(-d.Result.Total)
			rec.ivs = append(rec.ivs, interval{phPre, start, engStart}, interval{phPost, engEnd, ret})
			slices.SortFunc(ivs, func(a, b interval) int { return a.start.Compare(b.start) })
			cur := engStart
			for i, iv := range ivs {
				ph := phEngine
				if i == 0 {
					ph = phSetup
				}
				if iv.start.After(cur) {
					rec.ivs = append(rec.ivs, interval{ph, cur, iv.start})
				}
				if iv.end.After(cur) {
					cur = iv.end
				}
				if iv.phase == phNLPSetup {
					rec.nlps++
				}
			}
			if engEnd.After(cur) {
				rec.ivs = append(rec.ivs, interval{phEngine, cur, engEnd})
			}
			rec.ivs = append(rec.ivs, ivs...)
		} else {
			rec.ivs = append(rec.ivs, interval{phPre, start, ret})
		}
		act, err := pumpstation.DecodeApply(d.Apply, &pc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plant.Step(act.PumpsOn, act.Flow); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[i]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }

func summarizeOverrun(t *testing.T, tag string, budget time.Duration, recs []stepRecord) {
	late := make([]time.Duration, len(recs))
	n, misses := 0, 0
	statuses := map[string]int{}
	var after, total [numPhases]time.Duration
	var maxAfter [numPhases]time.Duration
	gcs := 0
	var pauses, lateGC, lateNoGC []time.Duration
	var alloc uint64
	for i := range recs {
		r := &recs[i]
		late[i] = r.late()
		if late[i] > 0 {
			misses++
		}
		n++
		statuses[r.status]++
		a, s := r.spent(true), r.spent(false)
		for p := range numPhases {
			after[p] += a[p]
			total[p] += s[p]
			maxAfter[p] = max(maxAfter[p], a[p])
		}
		if r.gcs > 0 {
			gcs++
			lateGC = append(lateGC, late[i])
		} else {
			lateNoGC = append(lateNoGC, late[i])
		}
		pauses = append(pauses, r.gcPause)
		alloc += r.alloc
	}
	t.Logf("[%s] budget %v, %d steps: overrun (return − deadline) p50 %s ms, p90 %s ms, p99 %s ms, max %s ms; returned after the deadline %d (%.1f%%); statuses %v; steps with a GC cycle %d",
		tag, budget, n, ms(quantile(late, .5)), ms(quantile(late, .9)), ms(quantile(late, .99)), ms(slices.Max(late)),
		misses, 100*float64(misses)/float64(n), statuses, gcs)
	var b strings.Builder
	for p := range numPhases {
		fmt.Fprintf(&b, "\n    %-13s mean %7s ms/step, past the deadline: total %8s ms, max in one step %7s ms", phaseNames[p],
			ms(total[p]/time.Duration(n)), ms(after[p]), ms(maxAfter[p]))
	}
	t.Logf("[%s] budget %v: where the time went%s", tag, budget, b.String())
	t.Logf("[%s] budget %v: GC: %.0f kB allocated per step; stop-the-world pause per step p99 %s ms, max %s ms; overrun p99 %s ms in the %d steps with a GC cycle, %s ms in the %d without",
		tag, budget, float64(alloc)/float64(n)/1e3, ms(quantile(pauses, .99)), ms(slices.Max(pauses)),
		ms(quantile(lateGC, .99)), len(lateGC), ms(quantile(lateNoGC, .99)), len(lateNoGC))
	// The five latest steps in detail.
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(recs[b].late(), recs[a].late()) })
	for _, i := range idx[:min(5, len(idx))] {
		r := &recs[i]
		a := r.spent(true)
		var parts []string
		for p := range numPhases {
			if a[p] > 0 {
				parts = append(parts, fmt.Sprintf("%s %s", phaseNames[p], ms(a[p])))
			}
		}
		s := r.spent(false)
		t.Logf("[%s] budget %v: step %d late %s ms (%s, %d iterations, %d NLPs, %d carried, GC %d/%v); past the deadline: %s; whole step: pre %s, nlp %s, master %s",
			tag, budget, r.step, ms(r.late()), r.status, r.iterations, r.nlps, r.carried, r.gcs, r.gcPause,
			strings.Join(parts, ", "), ms(s[phPre]), ms(s[phNLPSetup]+s[phNLPIter]+s[phNLPTail]), ms(s[phMaster]))
	}
}

func writeOverrunCSV(t *testing.T, path string, recs []stepRecord) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	head := []string{"step", "late_ms", "status", "iterations", "nlps", "carried", "gcs"}
	for p := range numPhases {
		head = append(head, phaseNames[p]+"_ms", phaseNames[p]+"_after_ms")
	}
	_ = w.Write(head)
	for i := range recs {
		r := &recs[i]
		row := []string{strconv.Itoa(r.step), ms(r.late()), r.status, strconv.Itoa(r.iterations), strconv.Itoa(r.nlps),
			strconv.Itoa(r.carried), strconv.Itoa(int(r.gcs))}
		a, s := r.spent(true), r.spent(false)
		for p := range numPhases {
			row = append(row, ms(s[p]), ms(a[p]))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
}
