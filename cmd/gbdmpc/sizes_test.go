package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSolveConfiguredStation solves with a shipped larger station's config, as a user would: a
// hand-written 40-binary measurement (5 pumps, 16 steps) gets a plan of 40 binaries from the CBC
// master under a deadline; the default station's measurement (3 pumps) is rejected for its sizes;
// the enum master is refused for a Y_pb it cannot scan.
func TestSolveConfiguredStation(t *testing.T) {
	series := func(v string) string { return strings.TrimSuffix(strings.Repeat(v+",", 16), ",") }
	in := `{"v":1,"level_m":3.0,"pumps_on":[0,1,0,0,0],"demand_m3h":[` + series("90") + `],"price_eur_kwh":[` + series("0.12") + `]}
{"v":1,"level_m":3.0,"pumps_on":[0,1,0],"demand_m3h":[` + series("90") + `],"price_eur_kwh":[` + series("0.12") + `]}
`
	out, stderr, code := runCLI(t, in, "solve", "--config", "../../configs/pumpstation-40.yaml", "--deadline", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res := parseResults(t, out)
	if len(res) != 2 {
		t.Fatalf("results: %+v", res)
	}
	if (res[0].Status != "optimal" && res[0].Status != "gap") || len(res[0].Y) != 40 {
		t.Errorf("40-binary measurement: %+v", res[0])
	}
	if res[1].Status != "error" || !strings.Contains(res[1].Message, `"pumps_on" has 3 values, want 5`) {
		t.Errorf("3-pump measurement on a 5-pump station: %+v", res[1])
	}
	_, stderr, code = runCLI(t, in, "solve", "--config", "../../configs/pumpstation-40.yaml", "--master", "enum")
	if code == 0 {
		t.Error("the enum master was accepted for a 40-binary station")
	} else if !strings.Contains(stderr, "cbc") {
		t.Errorf("refusal does not name the cbc master: %s", stderr)
	}
	_, stderr, code = runCLI(t, "", "solve", "--config", "../../configs/pumpstation-40.yaml", "--config-plant", "nope")
	if code == 0 || !strings.Contains(stderr, `no plant "nope"`) {
		t.Errorf("unknown --config-plant: exit %d, %s", code, stderr)
	}
}

// TestScalingCommand runs the scaling benchmark as a user would, on the small station for two
// steps, and refuses what it cannot run: unknown sizes, malformed --policy, an unknown master.
func TestScalingCommand(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := runCLI(t, "", "scaling", "--sizes", "12", "--steps", "2", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "| 12 | 889 | classical GBD | enum | 2 |") {
		t.Errorf("table:\n%s", out)
	}
	for _, f := range []string{"scaling.md", "scaling.json", "scaling.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Two agents beside classical GBD, each its own row: the perfect agent reaches classical GBD's
	// optimum at both steps (a random one may take another optimum of step 1, and then the plants
	// differ).
	out, stderr, code = runCLI(t, "", "scaling", "--sizes", "12", "--steps", "2", "--out", dir,
		"--policy", "12=builtin:oracle", "--policy", "12=builtin:random")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"| 12 | 889 | builtin:oracle | enum | 2 |", "| 12 | 889 | builtin:random | enum | 2 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q in\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "builtin:oracle") && !strings.Contains(line, "| 2/2 |") {
			t.Errorf("an agent's row does not reach classical GBD's optimum at both steps: %s", line)
		}
	}
	for _, args := range [][]string{
		{"--sizes", "13"},
		{"--sizes", "12,x"},
		{"--policy", "12"},
		{"--policy", "x=file"},
		{"--master", "simplex"},
		{"--steps", "0"},
	} {
		_, stderr, code := runCLI(t, "", append([]string{"scaling", "--out", dir}, args...)...)
		if code == 0 {
			t.Errorf("%v accepted", args)
		} else if stderr == "" {
			t.Errorf("%v: no message", args)
		}
	}
}

// TestImplicitSpaceRefusedWhereLabelsNeedIt: datagen labels masters by their position in Y_pb,
// which a 40-binary station does not enumerate; it says so instead of producing nothing.
func TestImplicitSpaceRefusedWhereLabelsNeedIt(t *testing.T) {
	_, stderr, code := runCLI(t, "", "datagen", "--config", "../../configs/pumpstation-40.yaml", "--sets", "1", "--out", t.TempDir())
	if code == 0 || !strings.Contains(stderr, "too large to enumerate") {
		t.Errorf("datagen on 40 binaries: exit %d, %s", code, stderr)
	}
}

// TestCutsInstanceCounts: `cuts --instances` takes one count for every size or one per size, and
// a run with per-size counts draws that many instances of each (its table says so).
func TestCutsInstanceCounts(t *testing.T) {
	for _, c := range []struct {
		in    string
		sizes int
		want  []int
		bad   bool
	}{
		{"8", 3, []int{8, 8, 8}, false},
		{"24,24,6", 3, []int{24, 24, 6}, false},
		{" 2 , 1", 2, []int{2, 1}, false},
		{"24,6", 3, nil, true},
		{"0", 1, nil, true},
		{"4,x", 2, nil, true},
	} {
		got, err := parseCounts(c.in, c.sizes)
		if (err != nil) != c.bad {
			t.Errorf("parseCounts(%q, %d): err %v", c.in, c.sizes, err)
			continue
		}
		if !c.bad && fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("parseCounts(%q, %d) = %v, want %v", c.in, c.sizes, got, c.want)
		}
	}
	dir := t.TempDir()
	out, stderr, code := runCLI(t, "", "cuts", "--sizes", "12", "--instances", "2", "--limit", "20s", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "| 12 | strengthened | enum | 2 / 2 |") {
		t.Errorf("table:\n%s", out)
	}
	if _, _, code := runCLI(t, "", "cuts", "--sizes", "12,24", "--instances", "1,2,3", "--out", dir); code == 0 {
		t.Error("three counts for two sizes accepted")
	}
}
