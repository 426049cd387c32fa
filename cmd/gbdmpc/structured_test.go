package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStructuredAgentFromSimulatedPlant is the large-station workflow as an operator runs it, on
// the spec's station made implicit (max_enumerate below its 889 assignments, so nothing enumerates
// Y_pb): a simulated day's decision log (simulate --decision-log, staged master), replay labelling
// it with the staged master and training the structured agent from scratch, shadow re-runs with
// the staged master, and the agent running in closed loop.
func TestStructuredAgentFromSimulatedPlant(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("../../configs/pumpstation-40.yaml")
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(src), "    params:")
	if !ok {
		t.Fatal("configs/pumpstation-40.yaml has no params block")
	}
	cfg := filepath.Join(dir, "implicit.yaml")
	if err := os.WriteFile(cfg, []byte(head+"    params:\n      max_enumerate: 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "log")
	_, stderr, code := runCLI(t, "", "simulate", "--config", cfg, "--master", "staged", "--steps", "6",
		"--decision-log", logDir, "--out", filepath.Join(dir, "sim"))
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	agent, report := filepath.Join(dir, "agent.gbdp"), filepath.Join(dir, "report")
	out, stderr, code := runCLI(t, "", "replay", "--log", logDir, "--config", cfg, "--preset", "light",
		"--stage1-epochs", "3", "--stage2-epochs", "1", "--max-solves", "1", "--tmin", "0.002", "--tmax", "0.005",
		"--out", agent, "--force", "--dataset-out", filepath.Join(dir, "data.jsonl.gz"), "--report", report)
	if code != 0 {
		t.Fatalf("replay: exit %d: %s\n%s", code, stderr, out)
	}
	raw, err := os.ReadFile(filepath.Join(report, "replay-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Replay struct {
			Masters       int `json:"masters"`
			Solves        int `json:"solves"`
			LoggedOptimal int `json:"logged_optimal"`
			LabelAgrees   int `json:"label_agrees"`
		} `json:"replay"`
		Training struct {
			Variant string `json:"variant"`
		} `json:"training"`
		Shadow struct {
			Master string `json:"master"`
			Rerun  int    `json:"rerun"`
			New    struct {
				Rerun struct {
					Proposed int `json:"proposed"`
					Matches  int `json:"match_classical"`
				} `json:"rerun"`
			} `json:"new"`
		} `json:"shadow"`
		Written string `json:"written"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	r := rep.Replay
	if r.Solves != 6 || r.Masters < 6 || r.LoggedOptimal == 0 || r.LabelAgrees != r.LoggedOptimal {
		t.Errorf("replay: %+v: want 6 solves' masters labelled, agreeing with every logged optimal master", r)
	}
	if rep.Training.Variant != "structured" || rep.Shadow.Master != "staged" || rep.Shadow.Rerun != 1 || rep.Written != agent {
		t.Errorf("training %+v, shadow master %q re-ran %d, wrote %q: want a structured agent, staged re-runs, the file written",
			rep.Training, rep.Shadow.Master, rep.Shadow.Rerun, rep.Written)
	}
	if n := rep.Shadow.New.Rerun; n.Proposed == 0 || n.Matches != 1 {
		t.Errorf("shadow re-run with the agent: %+v: want proposals and classical GBD's optimum", n)
	}
	out, stderr, code = runCLI(t, "", "simulate", "--config", cfg, "--master", "staged", "--steps", "2", "--policy", agent,
		"--agent-candidates", "8", "--agent-polish", "--tmin", "0.002", "--tmax", "0.005", "--out", filepath.Join(dir, "sim2"))
	if code != 0 {
		t.Fatalf("simulate with the agent: exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "agent") {
		t.Errorf("the closed loop's summary does not report the agent:\n%s", out)
	}
}
