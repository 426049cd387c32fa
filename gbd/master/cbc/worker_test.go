package cbc

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gbdmpc/internal/knob"
)

// resetWorkers ends every idle worker and the hooks, so that each test starts from none.
func resetWorkers(t *testing.T) {
	t.Helper()
	clean := func() {
		workersMu.Lock()
		ws := idle
		idle = nil
		workersMu.Unlock()
		for _, w := range ws {
			w.kill()
		}
		testHookWorkerStarted, testHookSent = nil, nil
		workerStderr = os.Stderr
		MaxWorkers = runtime.GOMAXPROCS(0)
		slotsOnce, slots = sync.Once{}, nil
	}
	clean()
	t.Cleanup(clean)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sameResult compares two solves of one problem; CBC is deterministic on one thread, so the
// isolated solve must give the inline one's answer.
func sameResult(t *testing.T, what string, a, b Result) {
	t.Helper()
	eq := func(x, y float64) bool { return x == y || math.Abs(x-y) <= 1e-9*(1+math.Abs(y)) }
	if a.Status != b.Status || !eq(a.Obj, b.Obj) || !eq(a.BestBound, b.BestBound) || len(a.X) != len(b.X) {
		t.Fatalf("%s: isolated %v obj %g bound %g |x| %d, inline %v obj %g bound %g |x| %d",
			what, a.Status, a.Obj, a.BestBound, len(a.X), b.Status, b.Obj, b.BestBound, len(b.X))
	}
	for j := range a.X {
		if !eq(a.X[j], b.X[j]) {
			t.Fatalf("%s: x[%d] isolated %g inline %g", what, j, a.X[j], b.X[j])
		}
	}
}

func TestIsolatedSolveAgreesWithInline(t *testing.T) {
	resetWorkers(t)
	rng := rand.New(rand.NewSource(7))
	for i := range knob.Size(60, 15) {
		m := randomMaster(rng, 5+rng.Intn(8), 1+rng.Intn(30), rng.Intn(3))
		in, err := Solve(m.problem(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := Solve(m.problem(), Options{Isolate: true})
		if err != nil {
			t.Fatal(err)
		}
		sameResult(t, "instance "+string(rune('A'+i%26)), out, in)
	}
	// Bad input comes back as the same typed error, from the worker's validation.
	p := randomMaster(rng, 6, 3, 0).problem()
	p.Obj[0] = math.NaN()
	_, errIn := Solve(p, Options{})
	_, errOut := Solve(p, Options{Isolate: true})
	var ie *InputError
	if !errors.As(errOut, &ie) || errOut.Error() != errIn.Error() {
		t.Fatalf("isolated bad input: %v, inline: %v", errOut, errIn)
	}
	// A recorded 40-binary master with a start and short limits: the crash-prone path (see
	// TestStartedTimeLimitDoesNotCrash), answered by the worker with valid bounds.
	rec, start := loadMaster(t, "started-limit-master.json")
	exact, err := Solve(rec, Options{Isolate: true})
	if err != nil || exact.Status != Optimal {
		t.Fatalf("recorded master: %v %v", exact.Status, err)
	}
	for _, lim := range []time.Duration{300 * time.Microsecond, 2 * time.Millisecond, 20 * time.Millisecond} {
		r, err := Solve(rec, Options{Isolate: true, TimeLimit: lim, Start: start})
		if err != nil {
			t.Fatal(err)
		}
		if r.BestBound > exact.Obj+1e-6 || !r.Status.HasIncumbent() || r.Obj < exact.Obj-1e-6 {
			t.Fatalf("limit %v: %v obj %g bound %g, optimum %g", lim, r.Status, r.Obj, r.BestBound, exact.Obj)
		}
	}
}

// A worker that dies during a solve fails that solve with a WorkerError and nothing else: the next
// solve gets a fresh worker and the right answer. A crash is made sure of by stopping the worker
// before it can answer, then sending SIGSEGV (what CBC's NULL dereference raises) and SIGCONT.
func TestIsolatedSolveSurvivesAWorkerCrash(t *testing.T) {
	resetWorkers(t)
	var mu sync.Mutex
	var pids []int
	testHookWorkerStarted = func(pid int) { mu.Lock(); pids = append(pids, pid); mu.Unlock() }
	var stderr lockedBuffer
	workerStderr = &stderr
	p := randomMaster(rand.New(rand.NewSource(3)), 10, 20, 1).problem()
	want, err := Solve(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGSEGV, syscall.SIGKILL} {
		if _, err := Solve(p, Options{Isolate: true}); err != nil { // a worker, idle after this
			t.Fatal(err)
		}
		testHookSent = func(pid int) {
			syscall.Kill(pid, syscall.SIGSTOP)
			syscall.Kill(pid, sig)
			syscall.Kill(pid, syscall.SIGCONT)
		}
		_, err := Solve(p, Options{Isolate: true, TimeLimit: time.Minute})
		testHookSent = nil
		if !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "ended during a solve") {
			t.Fatalf("%v: solve in a crashing worker: %v", sig, err)
		}
		got, err := Solve(p, Options{Isolate: true})
		if err != nil {
			t.Fatalf("after the crash: %v", err)
		}
		sameResult(t, "after the crash", got, want)
	}
	if !strings.Contains(stderr.String(), "SIGSEGV") {
		t.Errorf("the crashed worker's stderr does not name the signal:\n%.500s", stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 3 { // the first, and one after each crash
		t.Errorf("%d workers started, want 3", len(pids))
	}
}

// A worker that died while idle (killed from outside) is not handed a solve.
func TestIsolatedSolveSkipsAWorkerThatDiedIdle(t *testing.T) {
	resetWorkers(t)
	p := randomMaster(rand.New(rand.NewSource(4)), 8, 10, 0).problem()
	if _, err := Solve(p, Options{Isolate: true}); err != nil {
		t.Fatal(err)
	}
	workersMu.Lock()
	w := idle[0]
	workersMu.Unlock()
	w.cmd.Process.Kill()
	<-w.exited
	if _, err := Solve(p, Options{Isolate: true}); err != nil {
		t.Fatalf("solve after the idle worker died: %v", err)
	}
}

// A worker that does not answer within its limit and the grace is killed, and the solve fails.
func TestIsolatedSolveKillsAnOverrun(t *testing.T) {
	resetWorkers(t)
	saved := OverrunGrace
	OverrunGrace = func(time.Duration) time.Duration { return 50 * time.Millisecond }
	t.Cleanup(func() { OverrunGrace = saved })
	testHookSent = func(pid int) { syscall.Kill(pid, syscall.SIGSTOP) } // a hang
	p := randomMaster(rand.New(rand.NewSource(5)), 8, 10, 0).problem()
	_, err := Solve(p, Options{Isolate: true, TimeLimit: 10 * time.Millisecond})
	if !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "past its time limit") {
		t.Fatalf("hung worker: %v", err)
	}
	testHookSent = nil
	if _, err := Solve(p, Options{Isolate: true, TimeLimit: time.Second}); err != nil {
		t.Fatalf("after the kill: %v", err)
	}
}

// Isolated solves from many goroutines each get their own worker and the right answer.
func TestIsolatedSolvesInParallel(t *testing.T) {
	resetWorkers(t)
	rng := rand.New(rand.NewSource(6))
	const n = 4
	ms := make([]*master, n)
	want := make([]Result, n)
	for i := range ms {
		ms[i] = randomMaster(rng, 10, 25, 1)
		var err error
		if want[i], err = Solve(ms[i].problem(), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([][]Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				r, err := Solve(ms[i].problem(), Options{Isolate: true})
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], r)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for _, r := range got[i] {
			sameResult(t, "parallel", r, want[i])
		}
	}
	workersMu.Lock()
	defer workersMu.Unlock()
	if len(idle) > n {
		t.Errorf("%d idle workers after %d concurrent callers", len(idle), n)
	}
}

// The pipe's cost: a small random master (10 binaries, 8 cuts: a synthesis-sized one) solved
// exactly, and the recorded 40-binary master (≈400 rows) solved with a 1 ms limit, inline and in
// a worker.
func BenchmarkIsolatedOverhead(b *testing.B) {
	small := randomMaster(rand.New(rand.NewSource(11)), 10, 8, 0).problem()
	p, start := loadMaster(&testing.T{}, "started-limit-master.json")
	for _, c := range []struct {
		name string
		p    *Problem
		o    Options
	}{
		{"small", small, Options{}},
		{"recorded40-1ms", p, Options{TimeLimit: time.Millisecond, Start: start}},
	} {
		b.Run(c.name, func(b *testing.B) {
			inlineAndIsolated(b, func(b *testing.B, iso bool) {
				o := c.o
				o.Isolate = iso
				for range b.N {
					if _, err := Solve(c.p, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// inlineAndIsolated runs bench as two sub-benchmarks, inline and isolated.
func inlineAndIsolated(b *testing.B, bench func(b *testing.B, iso bool)) {
	for _, iso := range []bool{false, true} {
		name := "inline"
		if iso {
			name = "isolated"
		}
		b.Run(name, func(b *testing.B) { bench(b, iso) })
	}
}

// How far CBC itself runs past a time limit, inline and isolated (the caller's view: the pipe
// included): the recorded 40-binary master with a start, limits from 0.2 to 10 ms. OverrunGrace
// must stay well above the worst of these.
func BenchmarkLimitOverrun(b *testing.B) {
	p, start := loadMaster(&testing.T{}, "started-limit-master.json")
	inlineAndIsolated(b, func(b *testing.B, iso bool) {
		var worst, sum time.Duration
		n := 0
		for i := range b.N {
			lim := time.Duration(200+(i%50)*200) * time.Microsecond
			t0 := time.Now()
			if _, err := Solve(p, Options{Isolate: iso, TimeLimit: lim, Start: start}); err != nil {
				b.Fatal(err)
			}
			over := time.Since(t0) - lim
			worst, sum, n = max(worst, over), sum+over, n+1
		}
		b.ReportMetric(float64(worst)/1e6, "worst-overrun-ms")
		b.ReportMetric(float64(sum)/float64(n)/1e6, "mean-overrun-ms")
	})
}

// Two callers at once (GOMAXPROCS of them): inline solves queue for the one CBC thread, isolated
// ones run in a worker each. The recorded 40-binary master, solved to optimality.
func BenchmarkIsolatedParallel(b *testing.B) {
	p, _ := loadMaster(&testing.T{}, "started-limit-master.json")
	inlineAndIsolated(b, func(b *testing.B, iso bool) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := Solve(p, Options{Isolate: iso}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// MaxWorkers bounds the workers: with one, concurrent solves take turns in it, and a solve that
// cannot get it within its time limit fails rather than run past it.
func TestIsolatedSolvesShareMaxWorkers(t *testing.T) {
	resetWorkers(t)
	MaxWorkers = 1
	var started atomic.Int32
	testHookWorkerStarted = func(int) { started.Add(1) }
	p := randomMaster(rand.New(rand.NewSource(8)), 10, 25, 1).problem()
	want, err := Solve(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Solve(p, Options{Isolate: true})
			if err == nil && (r.Status != want.Status || math.Abs(r.Obj-want.Obj) > 1e-9) {
				err = fmt.Errorf("got %v %g, want %v %g", r.Status, r.Obj, want.Status, want.Obj)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d workers started with MaxWorkers 1", n)
	}
	// The one worker hangs in a solve (stopped) until its kill at 10 ms + the grace; a solve
	// limited to 5 ms meanwhile gets no worker and says so.
	saved := OverrunGrace
	OverrunGrace = func(time.Duration) time.Duration { return 200 * time.Millisecond }
	t.Cleanup(func() { OverrunGrace = saved })
	testHookSent = func(pid int) { syscall.Kill(pid, syscall.SIGSTOP) }
	hung := make(chan error, 1)
	go func() {
		_, err := Solve(p, Options{Isolate: true, TimeLimit: 10 * time.Millisecond})
		hung <- err
	}()
	for slots == nil || len(slots) == 0 { // the hung solve holds the slot once it has sent
		runtime.Gosched()
	}
	_, err = Solve(p, Options{Isolate: true, TimeLimit: 5 * time.Millisecond})
	if !errors.Is(err, ErrWorker) || !strings.Contains(err.Error(), "stayed busy") {
		t.Fatalf("solve behind a busy worker: %v", err)
	}
	if err := <-hung; !errors.Is(err, ErrWorker) {
		t.Fatalf("hung solve: %v", err)
	}
}

// SIGINT and SIGTERM reach a worker with its caller's process group (a terminal's Ctrl-C, a service
// manager stopping the group): whenever they come, the solve in hand goes on and the worker lives.
func TestIsolatedSolveSurvivesSIGINT(t *testing.T) {
	resetWorkers(t)
	var started atomic.Int32
	testHookWorkerStarted = func(int) { started.Add(1) }
	p, _ := loadMaster(t, "started-limit-master.json")
	want, err := Solve(p, Options{Isolate: true}) // a worker, past its start
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		sig := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}[i%2]
		// At once (the worker still decoding) up to well into CBC's search.
		delay := time.Duration(i) * 60 * time.Millisecond
		testHookSent = func(pid int) { time.AfterFunc(delay, func() { syscall.Kill(pid, sig) }) }
		r, err := Solve(p, Options{Isolate: true})
		if err != nil {
			t.Fatalf("%v after %v: %v", sig, delay, err)
		}
		sameResult(t, sig.String(), r, want)
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d workers started: a signal ended one", n)
	}
}

// Options.Interrupt ends an isolated solve at once: its worker (here hung) is killed and the solve
// returns stopped, without an incumbent or a bound; the next solve gets a fresh worker.
func TestIsolatedSolveInterrupted(t *testing.T) {
	resetWorkers(t)
	p := randomMaster(rand.New(rand.NewSource(9)), 8, 10, 0).problem()
	want, err := Solve(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Bool
	testHookSent = func(pid int) { syscall.Kill(pid, syscall.SIGSTOP); sent.Store(true) }
	before := Workers().Interrupted
	r, err := Solve(p, Options{Isolate: true, Interrupt: sent.Load})
	if err != nil || r.Status != StoppedNoIncumbent || r.X != nil || !math.IsInf(r.BestBound, -1) {
		t.Fatalf("interrupted solve: %v %v x %v bound %g", r.Status, err, r.X, r.BestBound)
	}
	if got := Workers().Interrupted - before; got != 1 {
		t.Errorf("%d interrupted solves counted", got)
	}
	testHookSent = nil
	got, err := Solve(p, Options{Isolate: true, Interrupt: func() bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "after the interrupt", got, want)
}

// A binary that never called ServeIfWorker cannot start workers (one would run the program): an
// isolated solve there fails at once with a *WorkerError naming the call, and starts no worker.
func TestIsolatedSolveWithoutServeIfWorker(t *testing.T) {
	resetWorkers(t)
	entered.Store(false)
	defer entered.Store(true)
	before := Workers()
	p := randomMaster(rand.New(rand.NewSource(11)), 6, 8, 0).problem()
	_, err := Solve(p, Options{Isolate: true})
	var we *WorkerError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "cbc.ServeIfWorker") {
		t.Fatalf("isolated solve without ServeIfWorker: %v, want a *WorkerError naming cbc.ServeIfWorker", err)
	}
	after := Workers()
	if after.Started != before.Started || after.Unstarted != before.Unstarted+1 {
		t.Fatalf("workers started %d → %d, unstarted %d → %d; want none started, one unstarted",
			before.Started, after.Started, before.Unstarted, after.Unstarted)
	}
}

// A package upgrade replaces the binary under a running daemon: the workers it starts afterwards
// must still be the running binary, which speaks its protocol. The test binary is copied, started
// to replace its own file with another program, and then must solve isolated.
func TestIsolatedSolveAfterTheBinaryIsReplaced(t *testing.T) {
	if os.Getenv("GBDMPC_TEST_REPLACED") == "1" {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		other, err := os.ReadFile("/bin/true")
		if err != nil {
			t.Skip(err)
		}
		if err := os.Remove(self); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(self, other, 0o755); err != nil {
			t.Fatal(err)
		}
		p := randomMaster(rand.New(rand.NewSource(10)), 8, 10, 0).problem()
		want, err := Solve(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Solve(p, Options{Isolate: true})
		if err != nil {
			t.Fatalf("isolated solve after the binary was replaced: %v", err)
		}
		sameResult(t, "after the upgrade", got, want)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	copyExe := filepath.Join(t.TempDir(), "cbc.test")
	if err := os.WriteFile(copyExe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyExe, "-test.run", "^TestIsolatedSolveAfterTheBinaryIsReplaced$", "-test.v")
	cmd.Env = append(os.Environ(), "GBDMPC_TEST_REPLACED=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("the copy: %v\n%s", err, out)
	}
}
