package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this package's command in a process of its own (the test binary with
// GBDMPC_TEST_MAIN=1), for what only a process shows: signals and exit status.
func TestMain(m *testing.M) {
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
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(stderr.String(), "gbdmpc solve: interrupted") {
			t.Fatalf("after SIGINT: %v, stderr %q; want exit status 130 and 'interrupted'", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("solve still running 30 s after SIGINT on an open pipe; stderr %q", stderr.String())
	}
}
