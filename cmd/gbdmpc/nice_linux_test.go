package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// statNice is the nice value (field 19) of a /proc/…/stat line.
func statNice(t *testing.T, stat string) int {
	t.Helper()
	// The command name (field 2) may hold spaces; the fields after its closing parenthesis don't.
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatalf("stat %q: %v", stat, err)
	}
	return n
}

// TestLowerGenerator runs in a child process (lowerGenerator changes the priority of the process
// it runs in for good): after it, every thread of the process but one runs 7 nice steps lower,
// and a command started through it runs at the process's old priority.
func TestLowerGenerator(t *testing.T) {
	if os.Getenv("GBDMPC_NICE_CHILD") == "" {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self, "-test.run=^TestLowerGenerator$", "-test.v")
		cmd.Env = append(os.Environ(), "GBDMPC_NICE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS")) {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	base := statNice(t, string(self))
	if base > 12 {
		t.Skipf("already at nice %d", base)
	}
	start, err := lowerGenerator(7)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue
		}
		switch n := statNice(t, string(b)); n {
		case base:
			kept++
		case base + 7:
		default:
			t.Errorf("thread %s at nice %d, want %d or %d", task.Name(), n, base, base+7)
		}
	}
	if kept != 1 {
		t.Errorf("%d threads kept nice %d, want the launcher's alone", kept, base)
	}
	var out bytes.Buffer
	child := exec.Command("cat", "/proc/self/stat")
	child.Stdout = &out
	if err := start(child); err != nil {
		t.Fatal(err)
	}
	if err := child.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := statNice(t, out.String()); n != base {
		t.Errorf("child started through the launcher at nice %d, want %d", n, base)
	}
	if _, err := lowerGenerator(20); err == nil {
		t.Error("nice 20 accepted")
	}
}
