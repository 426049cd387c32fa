package ipopt

import (
	"runtime"
	"testing"

	"gbdmpc/internal/testsupport"
)

// TestNoLeak runs thousands of solves through the success, warm-start and panic paths and checks
// that resident memory stays flat. An IpoptProblem that is never freed costs well over 100 KB
// (its options registry alone), so a leak on any path would add hundreds of MB.
func TestNoLeak(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("long resource test; skipped with -short and -race")
	}
	p := eqQuad()
	x0 := []float64{0, 0, 0}
	ref, err := Solve(p, x0, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	warm := &WarmStart{MultG: ref.MultG, MultXL: ref.MultXL, MultXU: ref.MultXU}
	panicky := &Problem{}
	*panicky = *p
	panicky.Eval = &panicEval{*p.Eval.(*funcEval)}
	solve := func(i int) {
		var err error
		switch i % 10 {
		case 0:
			// Stopped from the intermediate callback after a recovered panic.
			if _, err = Solve(panicky, x0, nil, Options{}); err == nil {
				t.Fatal("panic not reported")
			}
			return
		case 1:
			_, err = Solve(p, ref.X, warm, Options{WarmStart: true})
		default:
			_, err = Solve(p, x0, nil, Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 { // let allocators and caches reach steady state
		solve(i)
	}
	runtime.GC()
	before := testsupport.RSS(t)
	const n = 2700
	for i := range n {
		solve(i)
	}
	runtime.GC()
	after := testsupport.RSS(t)
	t.Logf("RSS %d KiB → %d KiB over %d solves", before>>10, after>>10, n)
	if growth := after - before; growth > 16<<20 {
		t.Errorf("RSS grew by %d KiB over %d solves (%d B/solve)", growth>>10, n, growth/n)
	}
}

// TestCallbacksDoNotAllocate compares Go allocations of a short and a long solve of the same
// problem: per-solve setup allocates, but the callbacks, which run a few times per iteration,
// must not.
func TestCallbacksDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	p := rosenbrock(10, 0)
	x0 := rosenStart(10)
	allocs := func(iters int) float64 {
		var r Result
		a := testing.AllocsPerRun(20, func() {
			r, _ = Solve(p, x0, nil, Options{MaxIter: iters})
		})
		if r.Status != MaximumIterationsExceeded {
			t.Fatalf("MaxIter %d: status %v; the problem must not converge that fast", iters, r.Status)
		}
		return a
	}
	short, long := allocs(2), allocs(12)
	t.Logf("Go allocations per solve: %v after 2 iterations, %v after 12", short, long)
	if long > short {
		t.Errorf("10 more iterations allocated %v more times: callbacks allocate", long-short)
	}
}
