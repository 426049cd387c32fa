package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"gbdmpc/gbd/master/cbc"
	"gbdmpc/internal/testsupport"
)

// TestMain lets a test run this package's command in a process of its own (the test binary with
// GBDMPC_TEST_MAIN=1), for what only a process shows: signals and exit status; and, as main does,
// lets the binary serve as a CBC worker.
func TestMain(m *testing.M) {
	cbc.ServeIfWorker()
	if os.Getenv("GBDMPC_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestSignalEndsSolveOnOpenPipe: `gbdmpc solve` fed by a pipe that stays open (a plant's tool
// streaming instances) answers a line, then a SIGINT ends it at once with status 130 and says it
// was interrupted, though no more input and no end of input ever come.
func TestSignalEndsSolveOnOpenPipe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "solve", "--plant", "synthesis", "--master", "enum")
	cmd.Env = append(os.Environ(), "GBDMPC_TEST_MAIN=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// The first result line shows the command running with its handlers in place.
		sc := bufio.NewScanner(out)
		if !sc.Scan() || !strings.Contains(sc.Text(), `"status":"optimal"`) {
			done <- errors.New("no optimal result line: " + sc.Text())
			return
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			done <- err
			return
		}
		for sc.Scan() {
		}
		done <- cmd.Wait()
	}()
	if _, err := in.Write([]byte(`{"v":1,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	waitInterrupted(t, done, &stderr, "on an open pipe", func() { _ = cmd.Process.Kill() })
}

// waitInterrupted waits up to 30 s for a `gbdmpc solve` that got SIGINT to end with status 130,
// saying "interrupted"; kill ends it if it does not.
func waitInterrupted(t *testing.T, done <-chan error, stderr *bytes.Buffer, what string, kill func()) {
	t.Helper()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "gbdmpc solve: interrupted") {
			t.Fatalf("after SIGINT %s: %v, stderr %q; want exit status 130 and 'interrupted'", what, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		kill()
		t.Fatalf("solve still running 30 s after SIGINT %s; stderr %q", what, stderr.String())
	}
}

// TestSignalEndsACBCSolveInProgress: Ctrl-C in a terminal (SIGINT to the process group) during a
// 40-binary `solve` without a deadline, while a CBC master runs in its worker process, ends the
// command within seconds: the interrupt kills the worker (CBC itself cannot be stopped), the
// engine ends the solve with what it has, the result line says "interrupted", and the status is
// 130. Before, the solve ran on for minutes (the engine looked at its interrupt only under a
// deadline, and a CBC master ran to its end).
func TestSignalEndsACBCSolveInProgress(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "solve", "--config", "../../configs/pumpstation-40.yaml", "--master", "cbc")
	cmd.Env = append(os.Environ(), "GBDMPC_TEST_MAIN=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's job
	cmd.Stdin = strings.NewReader(`{"v":1,"level_m":3.0,"pumps_on":[0,1,0,0,0],"demand_m3h":[80,80,80,80,80,80,80,80,80,80,80,80,80,80,80,80],` +
		`"price_eur_kwh":[0.12,0.12,0.12,0.12,0.12,0.12,0.12,0.12,0.35,0.35,0.35,0.35,0.35,0.35,0.35,0.35]}` + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// A worker exists once the first master solve has started; that solve, from scratch on 40
	// binaries, takes seconds to minutes.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for len(testsupport.CBCWorkers(cmd.Process.Pid)) == 0 {
		select {
		case err := <-done:
			t.Fatalf("solve ended before its first CBC master: %v\n%s", err, stderr.String())
		case <-tick.C:
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitInterrupted(t, done, &stderr, "during a CBC master", func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var res struct {
		Status, Message string
	}
	// The incumbent with status gap, or, when the first assignment was infeasible and no master
	// had answered yet, no solution; either way the message says why.
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || !strings.HasPrefix(res.Message, "interrupted") && !strings.Contains(res.Message, "no_solution: interrupted") {
		t.Fatalf("result line %q (%v): want a result that says it was interrupted", stdout.String(), err)
	}
	t.Logf("status %s: %s", res.Status, res.Message)
}
