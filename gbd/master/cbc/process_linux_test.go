package cbc

import (
	"io"
	"math/rand"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"gbdmpc/internal/testsupport"
)

// captureOutput runs f with file descriptors 1 and 2 redirected to a pipe,
// which catches CBC's stdio and any direct writes, and returns what was
// written.
func captureOutput(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	saved := [2]int{}
	for i, fd := range []int{1, 2} {
		if saved[i], err = syscall.Dup(fd); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	for _, fd := range []int{1, 2} {
		if err := syscall.Dup3(int(w.Fd()), fd, 0); err != nil {
			t.Fatal(err)
		}
	}
	func() {
		defer func() {
			flushCStdout()
			for i, fd := range []int{1, 2} {
				syscall.Dup3(saved[i], fd, 0)
				syscall.Close(saved[i])
			}
			w.Close()
		}()
		f()
	}()
	return <-done
}

// TestQuietByDefault checks that no solve path prints anything with the
// default LogLevel, and that the capture itself works (LogLevel 1 prints).
func TestQuietByDefault(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	master := randomMaster(rng, 10, 15, 0).problem()
	knap := randomMKP(rng, 20, 3).problem()
	var errs []error
	out := captureOutput(t, func() {
		run := func(p *Problem, o Options) {
			if _, err := Solve(p, o); err != nil {
				errs = append(errs, err)
			}
		}
		run(master, Options{})
		run(master, Options{Preset: PresetCBC})
		run(master, Options{Start: make([]float64, master.NumCols), MaxNodes: 1})
		run(master, Options{Params: []Param{{"trust", "-1"}, {"cuts", "root"}}})
		run(knap, Options{Preset: PresetCBC, TimeLimit: 2 * time.Millisecond})
		run(knap, Options{Preset: PresetCBC, RelGap: 0.05})
		run(knap, Options{Preset: PresetCBC, MaxNodes: 5, Threads: 2})
		for _, c := range knownCases() {
			run(c.p, Options{})
			run(c.p, Options{Preset: PresetCBC})
		}
	})
	for _, err := range errs {
		t.Error(err)
	}
	if out != "" {
		t.Errorf("solves with LogLevel 0 printed:\n%s", out)
	}
	loud := captureOutput(t, func() { Solve(master, Options{LogLevel: 1}) })
	if !strings.Contains(loud, "Cbc") {
		t.Errorf("LogLevel 1 printed nothing; capture is broken: %q", loud)
	}
}

// kernelSigaction is struct sigaction as the rt_sigaction system call sees
// it on linux/amd64.
type kernelSigaction struct {
	handler, flags, restorer, mask uint64
}

func sigintAction(t *testing.T) kernelSigaction {
	t.Helper()
	var sa kernelSigaction
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGINT), 0,
		uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
		t.Fatal(e)
	}
	return sa
}

// TestSIGINTSurvivesSolve checks the Go runtime still owns SIGINT after
// solves: CbcMain1 and Clp replace it with signal(2) and would otherwise
// "restore" Go's handler without SA_SIGINFO|SA_ONSTACK, after which a
// Ctrl-C landing on a thread running Go code is fatal.
func TestSIGINTSurvivesSolve(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("kernelSigaction layout is amd64's")
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	defer signal.Stop(ch)
	before := sigintAction(t)
	master := randomMaster(rand.New(rand.NewSource(5)), 8, 10, 0).problem()
	for _, o := range []Options{{}, {Preset: PresetCBC}, {MaxNodes: 1}} {
		if _, err := Solve(master, o); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range knownCases() { // includes the pure-LP (Clp-only) path
		if _, err := Solve(c.p, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if after := sigintAction(t); after != before {
		t.Fatalf("SIGINT action changed by solves: %+v, was %+v", after, before)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGINT not delivered to signal.Notify")
	}
}

// TestNoLeak runs thousands of solves through every result path and
// bounds RSS growth. A CBC solve allocates 15–25 MB, so a missing
// Cbc_deleteModel would add gigabytes here; what remains is glibc arena
// retention on the solver thread, which plateaus around 10 MB.
func TestNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	rng := rand.New(rand.NewSource(17))
	var ps []*Problem
	for i := 0; i < 50; i++ {
		ps = append(ps, randomMaster(rng, 5+rng.Intn(4), 1+rng.Intn(8), rng.Intn(2)).problem())
	}
	known := knownCases()
	solve := func(i int) {
		var err error
		switch i % 10 {
		case 0:
			_, err = Solve(ps[i%len(ps)], Options{MaxNodes: 1}) // stopped: extra LP solve
		case 1:
			_, err = Solve(known[i%len(known)].p, Options{}) // infeasible/unbounded/LP paths
		case 2:
			_, err = Solve(ps[i%len(ps)], Options{Start: make([]float64, ps[i%len(ps)].NumCols)})
		default:
			_, err = Solve(ps[i%len(ps)], Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i++ {
		solve(i)
	}
	runtime.GC()
	before := testsupport.RSS(t)
	const n = 3000
	for i := 0; i < n; i++ {
		solve(i)
	}
	runtime.GC()
	after := testsupport.RSS(t)
	t.Logf("RSS %d kB → %d kB over %d solves", before>>10, after>>10, n)
	if growth := after - before; growth > 32<<20 {
		t.Errorf("RSS grew by %d MB over %d solves", growth>>20, n)
	}
}
