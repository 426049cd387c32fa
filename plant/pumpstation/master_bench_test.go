package pumpstation

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/staged"
)

// The cuts of two 40-binary solves from scratch (sustained two-pump demand, strengthened cuts,
// exact staged master steps), as the engine's Result.Cuts held them at the end: testdata/master40-*.json.
var masterCutFiles = []string{"testdata/master40-a.json", "testdata/master40-b.json"}

func loadMasterCuts(tb testing.TB, path string) []gbd.Cut {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			tb.Fatal(err)
		}
		if b, err = io.ReadAll(r); err != nil {
			tb.Fatal(err)
		}
	}
	var cuts []gbd.Cut
	if err := json.Unmarshal(b, &cuts); err != nil {
		tb.Fatal(err)
	}
	return cuts
}

// stagedMasterAt solves the exact staged master of the first n cuts from a fresh Reset.
func stagedMasterAt(tb testing.TB, m *staged.Master, ypb *gbd.Admissible, c *Config, cuts []gbd.Cut, n int) gbd.MasterResult {
	tb.Helper()
	if err := m.Reset(c.NY(), PureRows(c), ypb); err != nil {
		tb.Fatal(err)
	}
	for k := range cuts[:n] {
		m.AddCut(&cuts[k])
	}
	r, err := m.Solve(0, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// benchStagedMaster times m's exact master of the first n cuts, each from a fresh Reset, and
// reports the search's nodes.
func benchStagedMaster(b *testing.B, m *staged.Master, ypb *gbd.Admissible, c *Config, cuts []gbd.Cut, n int) {
	nodes := 0
	for b.Loop() {
		stagedMasterAt(b, m, ypb, c, cuts, n)
		nodes = m.Nodes
	}
	b.ReportMetric(float64(nodes), "nodes")
}

// station is the sized station of ny binaries and its admissible set.
func station(tb testing.TB, ny int) (Config, *gbd.Admissible) {
	tb.Helper()
	c, err := SizedConfig(ny)
	if err != nil {
		tb.Fatal(err)
	}
	ypb, err := Admissible(&c)
	if err != nil {
		tb.Fatal(err)
	}
	return c, ypb
}

// BenchmarkStagedMaster40 times the exact staged master of a 40-binary solve's cut set, six cuts
// before its end (the hard masters of a solve, before the pool answers them), and reports the
// search's nodes, on one goroutine and on two (staged.Master.Workers), with the stages searched
// last to first (the default) and first to last (staged.Master.Forward).
func BenchmarkStagedMaster40(b *testing.B) {
	c, ypb := station(b, 40)
	for i, path := range masterCutFiles {
		cuts := loadMasterCuts(b, path)
		n := len(cuts) - 6
		for _, order := range []string{"backward", "forward"} {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("set%d-%dcuts/%s/workers=%d", i, n, order, workers), func(b *testing.B) {
					benchStagedMaster(b, &staged.Master{MaxPool: -1, Workers: workers, Forward: order == "forward"}, ypb, &c, cuts, n)
				})
			}
		}
	}
}

// BenchmarkStagedMaster60 is BenchmarkStagedMaster40 at 60 binaries, on two goroutines: the stage
// cuts of the hardest of six 60-binary solves from scratch (testdata/master60.json, the
// configs/pumpstation-60 station's solve, the cut set at its end less its last cut), in both
// orders; and the first 160 stage cuts of the slowest 60-binary solve measured, a drawn instance
// of the cut study (testdata/master60-slow.json.gz; 49.4 million nodes before the nogoods), in
// the search's order only.
func BenchmarkStagedMaster60(b *testing.B) {
	c, ypb := station(b, 60)
	cuts := loadMasterCuts(b, "testdata/master60.json")
	n := len(cuts) - 1
	for _, order := range []string{"backward", "forward"} {
		b.Run(fmt.Sprintf("%dcuts/%s", n, order), func(b *testing.B) {
			benchStagedMaster(b, &staged.Master{MaxPool: -1, Workers: 2, Forward: order == "forward"}, ypb, &c, cuts, n)
		})
	}
	slow := loadMasterCuts(b, "testdata/master60-slow.json.gz")
	b.Run(fmt.Sprintf("slow-%dcuts/backward", len(slow)), func(b *testing.B) {
		benchStagedMaster(b, &staged.Master{MaxPool: -1, Workers: 2}, ypb, &c, slow, len(slow))
	})
}

// BenchmarkStagedMasterCuts40 is the staged master's work around its search in a closed-loop
// step: a reset and the recorded cuts added (each a backward DP over the stages for its completion
// table), then a solve with a 1 ns time limit, which stops after the first step of its Lagrangian
// ascent (one DP) and the search's first nodes.
func BenchmarkStagedMasterCuts40(b *testing.B) {
	c, ypb := station(b, 40)
	cuts := loadMasterCuts(b, masterCutFiles[0])
	m := &staged.Master{MaxPool: -1, Workers: 1}
	for b.Loop() {
		if err := m.Reset(c.NY(), PureRows(&c), ypb); err != nil {
			b.Fatal(err)
		}
		for k := range cuts {
			m.AddCut(&cuts[k])
		}
		if _, err := m.Solve(time.Nanosecond, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(cuts)), "cuts")
}

// BenchmarkValidate is what a control step pays to validate the 12-binary station's problem
// (gbd.Problem.Validate, which formats row names only for an error).
func BenchmarkValidate(b *testing.B) {
	c := DefaultConfig()
	prof := DefaultProfile()
	in := Sample(rand.New(rand.NewPCG(1, 2)), &c, &prof)
	p := Problem(&c, &in)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}
