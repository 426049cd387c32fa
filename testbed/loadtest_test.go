package testbed

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"gbdmpc/internal/testsupport"
)

// TestLoadRuns runs the load test briefly (2 pump stations, a few periods, a junk flood) against
// mosquitto and checks that its report adds up: every period counted once, actions arrived, the
// flood reached the daemon and was rejected, and the daemon's resources were read. The figures
// themselves are the command's business (docs/performance.md, "The daemon under load").
func TestLoadRuns(t *testing.T) {
	testsupport.Long(t, "builds the daemon and runs it twice")
	broker := testsupport.StartMosquittoWith(t, "max_queued_messages 100000")
	defer broker.Kill()
	bin := testsupport.BuildDaemon(t)
	const steps = 3
	rep, err := RunLoad(context.Background(), LoadOptions{BrokerURL: broker.URL(), Plants: []int{2}, Period: time.Second,
		Steps: steps, Flood: true, Dir: t.TempDir(),
		Daemon: func(cfg string) *exec.Cmd { return exec.Command(bin, "serve", "--config", cfg) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Measurements != r.Plants*steps || r.OnTime+r.Missed != r.Measurements {
			t.Errorf("%d plants: %d measurements, %d on time, %d missed; want %d measurements, each counted once", r.Plants,
				r.Measurements, r.OnTime, r.Missed, r.Plants*steps)
		}
		if r.OnTime == 0 {
			t.Errorf("%d plants: no action on time", r.Plants)
		}
		if r.FloodSent == 0 || r.Rejected < float64(r.FloodSent)/2 {
			t.Errorf("%d plants: flood sent %d, daemon rejected %v", r.Plants, r.FloodSent, r.Rejected)
		}
		if r.RSSBytes <= 0 || r.PeakRSSBytes < r.RSSBytes || r.CPUCores <= 0 {
			t.Errorf("%d plants: rss %d, peak %d, cpu %v", r.Plants, r.RSSBytes, r.PeakRSSBytes, r.CPUCores)
		}
		// Three periods hold at least two whole sampled seconds, and the flood keeps the daemon busy.
		if !(r.CPUPeak > 0) || r.CPUPeak > float64(runtime.NumCPU())+0.5 {
			t.Errorf("%d plants: busiest second %v cores (run %v cores, %d processors)", r.Plants, r.CPUPeak, r.CPUCores, runtime.NumCPU())
		}
		if !(r.SolveP50 > 0 && r.SolveP99 >= r.SolveP50) || !(r.OverheadP99 > 0) {
			t.Errorf("%d plants: solve p50 %v p99 %v, overhead p99 %v", r.Plants, r.SolveP50, r.SolveP99, r.OverheadP99)
		}
		// The third period is past the warm-up: its round trip is counted, and holds its solve.
		if !(r.WarmRoundTripP99 > 0 && r.WarmOverheadP99 > 0 && r.WarmRoundTripP99 <= r.RoundTripP99) {
			t.Errorf("%d plants: warm round trip p99 %v, warm overhead p99 %v (all: %v)", r.Plants, r.WarmRoundTripP99,
				r.WarmOverheadP99, r.RoundTripP99)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil || strings.Count(b.String(), "\n") != 6 {
		t.Errorf("report text (%v):\n%s", err, b.String())
	}
	t.Log("\n" + b.String())
}
