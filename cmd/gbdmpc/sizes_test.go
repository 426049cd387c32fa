package main

import (
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
