package cbc

import (
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A solve with Options.Isolate runs in a worker: a child process of this same executable, started
// with workerEnv set, whose main calls ServeIfWorker, which serves solves one at a time over two
// pipes (its fds 3 and 4: CBC may print on 1 and 2) with the inline Solve. What a worker gives the
// caller:
//
//   - A crash inside CBC (CBC 2.10.8 dereferences NULL in at least one path; see Options.Start)
//     ends the worker, not the caller: the solve returns a *WorkerError naming the signal, and the
//     next solve starts a fresh worker.
//   - A solve that runs far past its time limit (CBC polls the limit between nodes and heuristic
//     passes only) is ended by killing the worker at the limit plus OverrunGrace.
//   - Solves in different workers run in parallel: the package-wide serialisation (doc.go,
//     Concurrency) is per process.
//
// The cost is the problem's trip through the pipes (gob both ways) and two process wake-ups,
// measured side by side with inline solves (BenchmarkIsolatedOverhead, 4 runs each): a small
// master solved exactly 1.20–1.37 against 1.22–1.26 ms, the recorded 40-binary master with a 1 ms
// limit 3.8–4.1 against 3.7–3.8 ms; ~0.3 ms a master in a GBD loop, where the worker idles
// between masters, plus ~10–20 ms to start a worker; and the memory of each idle worker. Two
// callers at once finish two solves in the time inline CBC takes for one
// (BenchmarkIsolatedParallel on 2 cores: 187 against 346 ms a solve).
//
// A worker survives the signals its caller's group gets (a terminal's Ctrl-C); Options.Interrupt
// is how the caller ends a solve in it: the worker is killed, which also stops CBC, which cannot be
// stopped from outside otherwise. Workers are kept for reuse, one per solve running at the same
// time and at most MaxWorkers (a solve beyond waits for one, as inline solves wait for the CBC
// thread), and end with the caller:
// they are killed when the thread that started them ends (PR_SET_PDEATHSIG, from a thread that
// never ends) and they exit when their request pipe closes. While workers live, goroutines of this
// package wait on them (spawnLoop, readAnswers, the process's Wait); goleak users should ignore
// them, as they ignore solverLoop.

// workerEnv, set to workerToken, tells ServeIfWorker that this process was started as a worker.
const (
	workerEnv   = "GBDMPC_CBC_WORKER"
	workerToken = "fd3-fd4-v1"
)

// OverrunGrace is how long past its TimeLimit an isolated solve may run before its worker is
// killed (the solve then fails with a *WorkerError): a hang costs one solve, not the caller. CBC's
// own overrun of a limit (a node, a heuristic pass, the model's set-up, the closing LP) is a few
// milliseconds on GBD masters (BenchmarkLimitOverrun: 3 ms mean, 5 ms worst over 200 limits on a
// recorded 40-binary master), well inside the default, a twentieth of the limit and at least 20 ms.
// A twentieth keeps the kill well inside the daemon's deadline_reserve (a tenth of the deadline; the
// engine's limit is at most the rest), so the plant still gets the solve's incumbent in time. A
// solve without a TimeLimit is never killed.
var OverrunGrace = func(limit time.Duration) time.Duration { return max(20*time.Millisecond, limit/20) }

// MaxWorkers bounds the worker processes alive at once (each holds some 20 MB of CBC's heap after a
// 40-binary master): the cores, by default, since more solves at once than cores would only share
// them. Set it before the first isolated solve.
var MaxWorkers = runtime.GOMAXPROCS(0)

// ErrWorker is matched by errors.Is for every *WorkerError.
var ErrWorker = errors.New("cbc: worker process failed")

// WorkerError reports an isolated solve that got no answer from its worker: the worker crashed,
// was killed for overrunning its time limit, or could not be started.
type WorkerError struct {
	Msg string
}

func (e *WorkerError) Error() string { return "cbc: worker process: " + e.Msg }

func (e *WorkerError) Is(target error) bool { return target == ErrWorker }

// ServeIfWorker turns this process into a CBC worker if it was started as one, and otherwise
// returns at once. In a worker it serves isolated solves until its caller closes the pipe, then
// exits the process: it never returns there.
//
// A worker is this same executable started again, so every main that links this package calls
// ServeIfWorker first thing, before it parses flags or starts anything, and so does the TestMain
// of every test package whose tests solve with Options.Isolate (a worker started from a test
// binary must not run the tests). An explicit call, not a package init, so that linking a solver
// does not change what a binary does at start-up. A process that has not called it cannot start
// workers: its isolated solves fail at once with a *WorkerError that names the missing call.
func ServeIfWorker() {
	v, ok := os.LookupEnv(workerEnv)
	if !ok {
		entered.Store(true)
		return
	}
	if v != workerToken {
		fmt.Fprintf(os.Stderr, "%s=%q: not a CBC worker's value; unset it\n", workerEnv, v)
		os.Exit(2)
	}
	os.Exit(serveWorker())
}

// entered is set once ServeIfWorker has returned: this binary's main calls it, so a worker started
// from this executable will serve rather than run the program.
var entered atomic.Bool

// errNoEntry is why an isolated solve fails in a process that never called ServeIfWorker.
const errNoEntry = "this binary never called cbc.ServeIfWorker: call it first thing in main " +
	"(and in TestMain for tests), or a worker started from it would run the program instead of serving"

// WorkerCounts are this process's worker statistics since it started.
type WorkerCounts struct {
	Started     uint64 // workers started
	Running     int    // workers alive now, idle or solving
	Crashed     uint64 // solves whose worker ended before answering (a crash inside CBC, a kill)
	Overrun     uint64 // solves whose worker was killed past its time limit plus OverrunGrace
	Unstarted   uint64 // solves that could not start or reach a worker
	Interrupted uint64 // solves ended by Options.Interrupt (their workers killed)
}

// interruptPoll is how often an isolated solve asks Options.Interrupt.
const interruptPoll = 5 * time.Millisecond

var counts struct {
	started, crashed, overrun, unstarted, interrupted atomic.Uint64
	running                                           atomic.Int64
}

// Workers returns the worker statistics (for the daemon's metrics).
func Workers() WorkerCounts {
	return WorkerCounts{
		Started: counts.started.Load(), Running: int(counts.running.Load()),
		Crashed: counts.crashed.Load(), Overrun: counts.overrun.Load(), Unstarted: counts.unstarted.Load(),
		Interrupted: counts.interrupted.Load(),
	}
}

type workerRequest struct {
	P Problem
	O Options
}

type workerResponse struct {
	R     Result
	Input *InputError
	Call  *CallError
}

// servingWorker is set in a worker process, whose serving goroutine is the CBC thread: serveWorker
// locks it to its thread and never returns to unlock it.
var servingWorker bool

// serveWorker answers requests on fd 3 with responses on fd 4 until fd 3 closes.
func serveWorker() int {
	runtime.LockOSThread()
	servingWorker = true
	in, out := os.NewFile(3, "requests"), os.NewFile(4, "responses")
	if in == nil || out == nil {
		fmt.Fprintln(os.Stderr, "cbc worker: fds 3 and 4 are not open")
		return 2
	}
	// A service manager's SIGTERM reaches the worker with its caller (same cgroup); a terminal's
	// Ctrl-C does not, the worker being in a process group of its own (spawn). The caller decides
	// what they mean (Options.Interrupt kills the worker when the solve must end), so the worker
	// only survives them.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM)
	dec, enc := gob.NewDecoder(in), gob.NewEncoder(out)
	for {
		var req workerRequest
		if err := dec.Decode(&req); err != nil {
			return 0 // the caller closed the pipe, or ended
		}
		req.O.Isolate = false
		r, err := Solve(&req.P, req.O)
		resp := workerResponse{R: r}
		var ie *InputError
		var ce *CallError
		switch {
		case errors.As(err, &ie):
			resp.Input = ie
		case errors.As(err, &ce):
			resp.Call = ce
		case err != nil:
			resp.Call = &CallError{Call: "Solve", Msg: err.Error()}
		}
		if err := enc.Encode(&resp); err != nil {
			return 0
		}
	}
}

type worker struct {
	cmd     *exec.Cmd
	req     *os.File // our end of its fd 3
	resp    *os.File // our end of its fd 4
	enc     *gob.Encoder
	dec     *gob.Decoder
	answers chan workerAnswer
	exited  chan struct{} // closed once cmd.Wait returned; waitErr is then set
	waitErr error
}

type workerAnswer struct {
	resp workerResponse
	err  error
}

// idle workers, the slots that bound them, and the thread that starts them.
var (
	slotsOnce sync.Once
	slots     chan struct{}
	workersMu sync.Mutex
	idle      []*worker
	spawnOnce sync.Once
	spawns    chan chan spawned
)

type spawned struct {
	w   *worker
	err error
}

// workerStderr receives what workers write on their stderr: CBC's complaints, and the stack trace
// of a crash.
var workerStderr io.Writer = os.Stderr

// Test hooks: testHookWorkerStarted is told every new worker's pid, testHookSent that a request
// is on its way to the worker with that pid.
var (
	testHookWorkerStarted func(pid int)
	testHookSent          func(pid int)
)

// spawnLoop starts workers from one locked thread that never ends: PR_SET_PDEATHSIG fires when the
// thread that forked the child ends, not the process, so a worker started from a runtime thread
// that Go later retires would be killed with it.
func spawnLoop() {
	runtime.LockOSThread()
	for reply := range spawns {
		w, err := startWorker()
		reply <- spawned{w, err}
	}
}

func newWorker() (*worker, error) {
	spawnOnce.Do(func() {
		spawns = make(chan chan spawned)
		go spawnLoop()
	})
	reply := make(chan spawned, 1)
	spawns <- reply
	s := <-reply
	return s.w, s.err
}

func startWorker() (*worker, error) {
	// The running binary itself, even after a package upgrade has replaced the file on disk: the
	// worker must speak this binary's protocol.
	exe := "/proc/self/exe"
	if _, err := os.Stat(exe); err != nil {
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       exe,
		Args:       []string{"gbdmpc-cbc-worker"},
		Env:        append(os.Environ(), workerEnv+"="+workerToken),
		Stderr:     workerStderr,
		ExtraFiles: []*os.File{reqR, respW},
		// A process group of its own: a terminal's Ctrl-C goes to the caller's group, and would
		// kill a worker still in its start-up, before it can ignore the signal (every package's
		// init runs before main calls ServeIfWorker). The caller's end kills it (Pdeathsig).
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true},
	}
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, err
	}
	w := &worker{
		cmd: cmd, req: reqW, resp: respR,
		enc: gob.NewEncoder(reqW), dec: gob.NewDecoder(respR),
		answers: make(chan workerAnswer, 1),
		exited:  make(chan struct{}),
	}
	counts.started.Add(1)
	counts.running.Add(1)
	go func() {
		w.waitErr = cmd.Wait()
		counts.running.Add(-1)
		close(w.exited)
	}()
	go w.readAnswers()
	if testHookWorkerStarted != nil {
		testHookWorkerStarted(cmd.Process.Pid)
	}
	return w, nil
}

// readAnswers decodes responses as they come; after a decode error (the worker died) it stops.
func (w *worker) readAnswers() {
	for {
		var a workerAnswer
		a.err = w.dec.Decode(&a.resp)
		w.answers <- a
		if a.err != nil {
			return
		}
	}
}

// kill ends the worker and waits for it, and says how it ended.
func (w *worker) kill() string {
	w.cmd.Process.Kill()
	w.req.Close()
	<-w.exited
	w.resp.Close()
	if w.waitErr != nil {
		return w.waitErr.Error()
	}
	return "exited"
}

// stoppedBySignal reports, once the worker has exited, that SIGINT or SIGTERM ended it.
func (w *worker) stoppedBySignal() bool {
	var ee *exec.ExitError
	if !errors.As(w.waitErr, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGINT || ws.Signal() == syscall.SIGTERM)
}

// takeIdle returns an idle worker that is still running, or nil; one that ended while idle (killed
// from outside, say) is let go.
func takeIdle() *worker {
	workersMu.Lock()
	defer workersMu.Unlock()
	for len(idle) > 0 {
		w := idle[len(idle)-1]
		idle = idle[:len(idle)-1]
		select {
		case <-w.exited:
			w.kill()
		default:
			return w
		}
	}
	return nil
}

// solveIsolated is Solve in a worker (Options.Isolate).
func solveIsolated(p *Problem, opt Options) (Result, error) {
	fail := noAnswer(Failed)
	if !entered.Load() {
		counts.unstarted.Add(1)
		return fail, &WorkerError{Msg: errNoEntry}
	}
	slotsOnce.Do(func() { slots = make(chan struct{}, max(1, MaxWorkers)) })
	if opt.TimeLimit > 0 {
		// The wait for a worker is part of the solve's time: it gets what is left of its limit.
		t0 := time.Now()
		wait := time.NewTimer(opt.TimeLimit)
		select {
		case slots <- struct{}{}:
			wait.Stop()
		case <-wait.C:
			counts.unstarted.Add(1)
			return fail, &WorkerError{Msg: fmt.Sprintf("all %d workers stayed busy for the solve's whole time limit %v", cap(slots), opt.TimeLimit)}
		}
		opt.TimeLimit = max(time.Microsecond, opt.TimeLimit-time.Since(t0))
	} else {
		slots <- struct{}{}
	}
	defer func() { <-slots }()
	w := takeIdle()
	if w == nil {
		var err error
		if w, err = newWorker(); err != nil {
			counts.unstarted.Add(1)
			return fail, &WorkerError{Msg: "start: " + err.Error()}
		}
	}
	t0 := time.Now()
	if err := w.enc.Encode(&workerRequest{P: *p, O: opt}); err != nil {
		counts.unstarted.Add(1)
		return fail, &WorkerError{Msg: "send: " + err.Error() + " (" + w.kill() + ")"}
	}
	if testHookSent != nil {
		testHookSent(w.cmd.Process.Pid)
	}
	var poll <-chan time.Time
	if opt.Interrupt != nil {
		tk := time.NewTicker(interruptPoll)
		defer tk.Stop()
		poll = tk.C
	}
	var overrun <-chan time.Time
	if opt.TimeLimit > 0 {
		t := time.NewTimer(opt.TimeLimit + OverrunGrace(opt.TimeLimit))
		defer t.Stop()
		overrun = t.C
	}
	for {
		select {
		case <-poll:
			if opt.Interrupt() {
				w.kill()
				counts.interrupted.Add(1)
				return noAnswer(StoppedNoIncumbent), nil
			}
			continue
		case a := <-w.answers:
			if a.err != nil {
				how := w.kill()
				if w.stoppedBySignal() {
					// A Ctrl-C or SIGTERM for the whole group that reached the worker while it
					// started, before it catches them: the caller got the same signal, so this is a
					// stop, not a crash.
					stopped := noAnswer(StoppedNoIncumbent)
					stopped.Raw.SIGINTRedelivered = true
					return stopped, nil
				}
				counts.crashed.Add(1)
				return fail, &WorkerError{Msg: "ended during a solve (" + how + "; its stack trace is on this process's stderr)"}
			}
			workersMu.Lock()
			idle = append(idle, w)
			workersMu.Unlock()
			switch {
			case a.resp.Input != nil:
				return fail, a.resp.Input
			case a.resp.Call != nil:
				return fail, a.resp.Call
			}
			return a.resp.R, nil
		case <-overrun:
			counts.overrun.Add(1)
			w.kill()
			return fail, &WorkerError{Msg: fmt.Sprintf("killed: the solve ran %v, past its time limit %v", time.Since(t0).Round(time.Millisecond), opt.TimeLimit)}
		}
	}
}
