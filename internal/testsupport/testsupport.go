// Package testsupport is what the tests of several packages share: a real mosquitto broker on a
// free loopback port, the daemon binary built once per test process, free ports, Prometheus
// readings and the process's RSS. It is used by tests only.
package testsupport

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"gbdmpc/configs"
	"gbdmpc/plant/pumpstation"
)

// MosquittoBin is where Debian installs the broker.
const MosquittoBin = "/usr/sbin/mosquitto"

// Mosquitto is a real broker on a free loopback port, started and killed by the test (Kill runs
// at the test's cleanup too). Conf is its configuration file, which a test may extend before Start.
type Mosquitto struct {
	t    testing.TB
	Port int
	Conf string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartMosquitto starts a broker that allows anonymous clients.
func StartMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	m := NewMosquitto(t)
	m.Start()
	return m
}

// StartMosquittoWith starts a broker whose configuration has the extra lines.
func StartMosquittoWith(t testing.TB, extra string) *Mosquitto {
	t.Helper()
	m := NewMosquitto(t)
	f, err := os.OpenFile(m.Conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m.Start()
	return m
}

// NewMosquitto configures a broker on a free port without starting it; the test is skipped when
// mosquitto is not installed.
func NewMosquitto(t testing.TB) *Mosquitto {
	t.Helper()
	if _, err := os.Stat(MosquittoBin); err != nil {
		t.Skipf("mosquitto not installed at %s (apt-get install mosquitto; `make test` does): %v", MosquittoBin, err)
	}
	port := FreePort(t)
	conf := filepath.Join(t.TempDir(), "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\nset_tcp_nodelay true\n", port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &Mosquitto{t: t, Port: port, Conf: conf}
	t.Cleanup(m.Kill)
	return m
}

// URL is the broker's address for an MQTT client.
func (m *Mosquitto) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", m.Port) }

// Start runs the broker and returns once it accepts connections (the test fails after 10 s).
func (m *Mosquitto) Start() {
	m.t.Helper()
	m.cmd = exec.Command(MosquittoBin, "-c", m.Conf)
	if err := m.cmd.Start(); err != nil {
		m.t.Fatalf("start mosquitto: %v", err)
	}
	m.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(m.cmd, m.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", m.Port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-m.done:
			m.t.Fatalf("mosquitto exited at start (port %d taken?)", m.Port)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("mosquitto not accepting on %d: %v", m.Port, err)
		}
	}
}

// Kill stops the broker at once (nothing when it is not running).
func (m *Mosquitto) Kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// FreePort is a loopback TCP port that was free a moment ago, for a server the test starts.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

var daemonBuild struct {
	once                sync.Once
	dir, bin, skip, err string
}

// BuildDaemon builds cmd/gbdmpc once per test process and returns the binary's path; the test is
// skipped when there is no go command.
func BuildDaemon(t testing.TB) string {
	t.Helper()
	daemonBuild.once.Do(func() {
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
		if err != nil {
			daemonBuild.skip = fmt.Sprintf("go list -m: %v (the go tool is needed to build the daemon)", err)
			return
		}
		dir, err := os.MkdirTemp("", "gbdmpc-test-bin-")
		if err != nil {
			daemonBuild.err = err.Error()
			return
		}
		daemonBuild.dir = dir
		bin := filepath.Join(dir, "gbdmpc")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/gbdmpc")
		cmd.Dir = strings.TrimSpace(string(root))
		if out, err := cmd.CombinedOutput(); err != nil {
			daemonBuild.err = fmt.Sprintf("go build: %v\n%s", err, out)
			return
		}
		daemonBuild.bin = bin
	})
	switch {
	case daemonBuild.skip != "":
		t.Skip(daemonBuild.skip)
	case daemonBuild.err != "":
		t.Fatal(daemonBuild.err)
	}
	return daemonBuild.bin
}

// RemoveDaemonBuild deletes the binary BuildDaemon made (for TestMain, after the tests).
func RemoveDaemonBuild() {
	if daemonBuild.dir != "" {
		os.RemoveAll(daemonBuild.dir)
	}
}

// HistQuantiles interpolates the 0.5 and 0.99 quantiles of a gathered Prometheus histogram within
// its buckets (the first series of name).
func HistQuantiles(tb testing.TB, g prometheus.Gatherer, name string) (p50, p99 float64) {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		q := func(q float64) float64 {
			rank := q * float64(h.GetSampleCount())
			lo, prev := 0.0, 0.0
			for _, bk := range h.GetBucket() {
				c := float64(bk.GetCumulativeCount())
				if c >= rank {
					if c == prev {
						return bk.GetUpperBound()
					}
					return lo + (bk.GetUpperBound()-lo)*(rank-prev)/(c-prev)
				}
				lo, prev = bk.GetUpperBound(), c
			}
			return lo
		}
		return q(0.5), q(0.99)
	}
	tb.Fatalf("no histogram %s", name)
	return 0, 0
}

// Counter is the value of a gathered counter or gauge, or a histogram's sample count, of the first
// series whose labels include the given name/value pairs (0 when there is none).
func Counter(tb testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// ProcStatus is a field of /proc/self/status (VmRSS, VmHWM, ...) as written there, "?" when it
// cannot be read.
func ProcStatus(key string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// Long marks a test that runs real processes or many solves: it is skipped under -short (what says
// what it does, for the skip message), and checks at its end, after every other cleanup, that it
// left no goroutine behind.
func Long(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + ": skipped under -short")
	}
	NoLeaks(t)
}

// NoLeaks checks at the test's end, after every cleanup registered after it, that the test left
// no goroutine behind. Ignored, all paho's and all of bounded life:
//   - a client's reconnect goroutine asleep in its back-off: a client whose broker the test stopped
//     retries with a doubling back-off, and Disconnect does not wake it; it ends when the sleep does;
//   - Disconnect's own goroutine, which finishes the session's close after Disconnect has returned
//     (its quiesce elapsed), and, when the client was connecting or reconnecting at the time, first
//     waits for that attempt to end.
//
// The daemon's clients never auto-reconnect, and the soak test holds them to a flat goroutine
// count, so nothing of the daemon's own is hidden by these.
func NoLeaks(t testing.TB) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t, PahoIgnores()...) })
}

// PahoIgnores are NoLeaks's exceptions, for a package's goleak.VerifyTestMain too: the last test's
// paho goroutines of bounded life may still be finishing when the package's tests end.
func PahoIgnores() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreAnyFunction("github.com/eclipse/paho%2emqtt%2egolang.(*backoffController).sleepWithBackoff"),
		goleak.IgnoreTopFunction("github.com/eclipse/paho%2emqtt%2egolang.(*client).Disconnect.func1"),
		goleak.IgnoreTopFunction("github.com/eclipse/paho%2emqtt%2egolang.(*connectionStatus).Disconnecting"),
	}
}

// RSS is this process's resident set in bytes (/proc/self/statm), which counts the C and C++ heaps
// (Ipopt, MUMPS, CBC) that the Go runtime's statistics cannot see. It skips the test where /proc
// is missing.
func RSS(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// ConfiguredMosquitto is a broker on port with the test's own configuration file, not started
// (Kill runs at the test's cleanup).
func ConfiguredMosquitto(t testing.TB, port int, conf string) *Mosquitto {
	m := &Mosquitto{t: t, Port: port, Conf: conf}
	t.Cleanup(m.Kill)
	return m
}

// PumpInstance is a pump-station forecast with the same demand (m³/h) and price (0.2 €/kWh) at
// every step, from level (m) with every pump off.
func PumpInstance(c *pumpstation.Config, level, demand float64) pumpstation.Instance {
	in := pumpstation.Instance{V: 1, Level: level, PumpsOn: make([]int, c.NP()),
		Demand: make([]float64, c.Horizon), Price: make([]float64, c.Horizon)}
	for t := range c.Horizon {
		in.Demand[t], in.Price[t] = demand, 0.2
	}
	return in
}

// EmbeddedConfig is a daemon config with the embedded broker and HTTP on free loopback ports and a
// random client id; with no plants, one pump station (2 s period, 1 s deadline).
func EmbeddedConfig(plants ...configs.Plant) *configs.Config {
	if len(plants) == 0 {
		plants = []configs.Plant{{ID: "p1", Family: "pumpstation", Period: 2 * time.Second, Deadline: time.Second, MaxAge: 5 * time.Second}}
	}
	id := make([]byte, 3)
	_, _ = rand.Read(id)
	c := &configs.Config{
		Broker: configs.Broker{Embedded: true, Listen: "127.0.0.1:0", ClientID: "gbdmpc-test-" + hex.EncodeToString(id)},
		HTTP:   configs.HTTP{Listen: "127.0.0.1:0"},
		Plants: plants,
	}
	c.ApplyDefaults()
	return c
}

// CBCWorkers are the CBC worker processes (cbc.Options.Isolate; "gbdmpc-cbc-worker" in ps) that
// the process pid started and that are still there, from /proc.
func CBCWorkers(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			child, err := strconv.Atoi(s)
			if err != nil {
				continue
			}
			if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); strings.HasPrefix(string(argv), "gbdmpc-cbc-worker") {
				out = append(out, child)
			}
		}
	}
	return out
}
