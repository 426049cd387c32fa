package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap/zaptest"

	"gbdmpc/configs"
	"gbdmpc/controller"
	"gbdmpc/solver"
)

// TestSolveModelPlant: `solve --config` with the pump station written as a model gives the
// built-in family's optimum and y for the same instance, written by the model's names; a line the
// model refuses gets an error result naming the member, and the others are still solved.
func TestSolveModelPlant(t *testing.T) {
	demand := `[60,60,60,60,70,70,70,70,90,90,90,90,80,80,80,80]`
	price := `[0.12,0.12,0.12,0.12,0.12,0.12,0.35,0.35,0.35,0.35,0.35,0.35,0.12,0.12,0.12,0.12]`
	builtin := `{"v":1,"level_m":3.0,"pumps_on":[0,1,0],"demand_m3h":` + demand + `,"price_eur_kwh":` + price + `}` + "\n"
	model := `{"v":1,"level_m":3.0,"p1":0,"p2":1,"p3":0,"demand_m3h":` + demand + `,"price_eur_kwh":` + price + `}` + "\n"
	out, stderr, code := runCLI(t, builtin, "solve", "--plant", "pumpstation", "--master", "enum", "--eps", "1e-7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := parseResults(t, out)
	bad := strings.Replace(model, `"p2":1`, `"p2":2`, 1)
	out, stderr, code = runCLI(t, model+bad+model, "solve", "--config", "../../configs/pumpstation-model.yaml", "--master", "enum", "--eps", "1e-7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := parseResults(t, out)
	if len(got) != 3 || len(want) != 1 || want[0].Objective == nil {
		t.Fatalf("results %+v and %+v", got, want)
	}
	for _, i := range []int{0, 2} {
		r := got[i]
		if r.Status != "optimal" || r.Objective == nil || math.Abs(*r.Objective-*want[0].Objective) > 1e-6*math.Abs(*want[0].Objective) {
			t.Errorf("line %d: %+v, built-in %v", i, r, *want[0].Objective)
			continue
		}
		for k := range r.Y {
			if r.Y[k] != want[0].Y[k] {
				t.Errorf("line %d: y %v, built-in %v", i, r.Y, want[0].Y)
				break
			}
		}
	}
	if got[1].Status != "error" || !strings.Contains(got[1].Message, `"p2" = 2, want 0 or 1`) {
		t.Errorf("refused line: %+v", got[1])
	}
}

// TestSimulateModelPlant: `simulate --config` closes the loop of a model written inline in a
// config and writes a CSV row per step by the model's names, a summary without fallbacks, and
// the decision log of its steps.
func TestSimulateModelPlant(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	out, stderr, code := runCLI(t, "", "simulate", "--config", "../../plant/registry/testdata/inline.yaml", "--steps", "3", "--out", dir, "--master", "enum",
		"--decision-log", logDir, "--plant-id", "tank")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"optimal": 3`) {
		t.Errorf("summary:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], ",level,q,pump,demand") {
		t.Errorf("steps.csv:\n%s", csv)
	}
	segs, _ := filepath.Glob(filepath.Join(logDir, "decisions-*.jsonl"))
	if len(segs) != 1 {
		t.Fatalf("decision log segments %v", segs)
	}
	logged, err := os.ReadFile(segs[0])
	if err != nil || !strings.Contains(string(logged), `"family":"model"`) || !strings.Contains(string(logged), `"level":`) {
		t.Errorf("decision log does not hold the model plant's steps (%v): %.300s", err, logged)
	}
}

// startModelDaemon starts the daemon as `gbdmpc serve` does, on its embedded broker, with one
// plant mg serving configs/models/microgrid.yaml; it returns the config file and the broker URL.
func startModelDaemon(t *testing.T) (cfgFile string, cfg *configs.Config, brokerURL string) {
	t.Helper()
	dir := t.TempDir()
	cfgText := fmt.Sprintf(`
broker: {embedded: true, listen: "127.0.0.1:0"}
http: {listen: "off"}
log: {level: warn, format: json}
plants:
  - {id: mg, family: model, model: %q, period: 20s, deadline: 10s, max_age: 60s, master: staged}
`, mustAbs(t, "../../configs/models/microgrid.yaml"))
	cfgFile = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(configs.Source{File: cfgFile, NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan controller.Info, 1)
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, cfg, controller.Deps{Logger: zaptest.NewLogger(t), Registry: serveRegistry(),
			Version: version, Started: func(i controller.Info) { started <- i }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
	select {
	case info := <-started:
		return cfgFile, cfg, info.BrokerURL
	case err := <-done:
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready within 30s")
	}
	return "", nil, ""
}

// TestServeModelPlant: the daemon serving the microgrid model answers a measurement by the
// model's names with an action whose apply holds every input and unit by name and respects the
// model's rules; a measurement the model refuses (a name given twice) gets a message on the error
// topic and no action.
func TestServeModelPlant(t *testing.T) {
	_, cfg, brokerURL := startModelDaemon(t)
	client := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(brokerURL).SetClientID("model-test").SetConnectTimeout(5 * time.Second))
	if tok := client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer client.Disconnect(100)
	got := make(chan [2]string, 8)
	for _, kind := range []string{"action", "error"} {
		if tok := client.Subscribe(cfg.Topic("mg", kind), 1, func(_ mqtt.Client, m mqtt.Message) { got <- [2]string{kind, string(m.Payload())} }); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("subscribe: %v", tok.Error())
		}
	}
	series := func(v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", 12), ",") + "]" }
	meas := func(seq int, extra string) string {
		return fmt.Sprintf(`{"v":1,"seq":%d,"ts_ms":%d,"soc_kwh":50,"charging":0,"discharging":0,"genset":0%s,"load_kw":%s,"pv_kw":%s,"import_eur_kwh":%s,"export_eur_kwh":%s}`,
			seq, time.Now().UnixMilli(), extra, series("60"), series("10"), series("0.5"), series("0.05"))
	}
	for _, p := range []string{meas(1, ""), meas(2, `,"genset":1`)} {
		if tok := client.Publish(cfg.Topic("mg", "measurement"), 1, false, p); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	var action struct {
		Status         string         `json:"status"`
		MeasurementSeq int            `json:"measurement_seq"`
		Apply          map[string]any `json:"apply"`
	}
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-got:
			if seen[m[0]] {
				t.Fatalf("a second %s: %s", m[0], m[1])
			}
			seen[m[0]] = true
			switch m[0] {
			case "action":
				if err := json.Unmarshal([]byte(m[1]), &action); err != nil {
					t.Fatal(err)
				}
			case "error":
				if !strings.Contains(m[1], `\"genset\" appears twice`) {
					t.Errorf("error message %s", m[1])
				}
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("received %v within 30s, want an action and an error", seen)
		}
	}
	if action.Status != "optimal" || action.MeasurementSeq != 1 || len(action.Apply) != 8 {
		t.Fatalf("action %+v", action)
	}
	for _, name := range []string{"charge_kw", "discharge_kw", "genset_kw", "import_kw", "export_kw", "charging", "discharging", "genset"} {
		if _, ok := action.Apply[name]; !ok {
			t.Errorf("apply %v has no %s", action.Apply, name)
		}
	}
	if action.Apply["charging"] == 1.0 && action.Apply["discharging"] == 1.0 {
		t.Errorf("apply charges and discharges at once: %v", action.Apply)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSimulateModelPlantMQTT: `simulate --mqtt` runs the microgrid model's simulated plant as an
// MQTT client of the daemon: every period gets an optimal action in time, and the run is written.
func TestSimulateModelPlantMQTT(t *testing.T) {
	cfgFile, _, brokerURL := startModelDaemon(t)
	dir := t.TempDir()
	out, stderr, code := runCLI(t, "", "simulate", "--config", cfgFile, "--mqtt", brokerURL, "--plant-id", "mg", "--steps", "3", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, `"optimal": 3`) {
		t.Errorf("summary:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "steps.csv"))
	if err != nil || strings.Count(string(csv), "\n") != 4 {
		t.Errorf("steps.csv (%v):\n%s", err, csv)
	}
}

// TestSimulateStationModel: `simulate --config configs/pumpstation-model.yaml --station 12` runs
// the built-in station's simulator with the model as the controller: the same day as `simulate
// --plant pumpstation`, step by step, so its steps.csv holds the same pumps and its summary the
// same cost. --station without a model is refused.
func TestSimulateStationModel(t *testing.T) {
	builtin, byModel := t.TempDir(), t.TempDir()
	common := []string{"--steps", "3", "--eps", "1e-7", "--master", "enum"}
	if _, stderr, code := runCLI(t, "", append([]string{"simulate", "--plant", "pumpstation", "--out", builtin}, common...)...); code != 0 {
		t.Fatalf("builtin: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "", append([]string{"simulate", "--config", "../../configs/pumpstation-model.yaml", "--station", "12", "--out", byModel}, common...)...); code != 0 {
		t.Fatalf("model: exit %d: %s", code, stderr)
	}
	cost := func(dir string) float64 {
		var s struct {
			Cost    float64 `json:"cost_eur"`
			Optimal int     `json:"optimal"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil || s.Optimal != 3 {
			t.Fatalf("%s: %v, %d steps optimal", dir, err, s.Optimal)
		}
		return s.Cost
	}
	if cb, cm := cost(builtin), cost(byModel); math.Abs(cb-cm) > 1e-5*math.Max(1, cb) {
		t.Errorf("day's cost: builtin %.6f €, model %.6f €", cb, cm)
	}
	if _, _, code := runCLI(t, "", "simulate", "--plant", "pumpstation", "--station", "12", "--steps", "1", "--out", t.TempDir()); code == 0 {
		t.Error("--station without a model plant ran")
	}
}

// TestSimulateTakesConfiguredDeadline: with --config, simulate's step deadline is the plant's
// configured deadline (inline.yaml: period 1s, so the default period/2) unless --step-deadline is
// given, 0 included.
func TestSimulateTakesConfiguredDeadline(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"--config", "../../plant/registry/testdata/inline.yaml"}, 500 * time.Millisecond},
		{[]string{"--config", "../../plant/registry/testdata/inline.yaml", "--step-deadline", "0"}, 0},
		{[]string{"--config", "../../plant/registry/testdata/inline.yaml", "--step-deadline", "2"}, 2 * time.Second},
		{[]string{"--plant", "pumpstation"}, 0},
	} {
		fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
		var pc plantConfig
		pc.register(fs)
		fs.String("plant", "", "")
		var budget time.Duration
		solver.DurationVar(fs, &budget, "step-deadline", 0, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := configDeadline(fs, &pc, &budget); err != nil {
			t.Fatal(err)
		}
		if budget != tc.want {
			t.Errorf("%v: step deadline %v, want %v", tc.args, budget, tc.want)
		}
	}
}
