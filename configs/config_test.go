package configs

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"gbdmpc/solver"
)

// fixtureFamilies are the plant families the configs under testdata name, given to Load as a
// build's registry would give its own.
var fixtureFamilies = []string{"model", "pumpstation", "synthesis"}

// TestConfigFiles loads every configuration under testdata: each one in good/ loads, and each one
// in bad/ fails with an error containing the substring its sidecar .err file states, so a change
// that makes a config fail for another reason than the one it was written for is caught.
func TestConfigFiles(t *testing.T) {
	for _, dir := range []string{"good", "bad"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no configs in testdata/%s: %v", dir, err)
		}
		for _, f := range files {
			t.Run(dir+"/"+filepath.Base(f), func(t *testing.T) {
				_, err := Load(Source{File: f, NoEnv: true, Families: fixtureFamilies})
				if dir == "good" {
					if err != nil {
						t.Fatalf("Load: %v", err)
					}
					return
				}
				want, rerr := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
				if rerr != nil {
					t.Fatalf("every bad config needs a .err file: %v", rerr)
				}
				if sub := strings.TrimSpace(string(want)); err == nil || !strings.Contains(err.Error(), sub) {
					t.Fatalf("error\n  %v\ndoes not contain\n  %q", err, sub)
				}
			})
		}
	}
}

func TestHADefaults(t *testing.T) {
	c, err := Load(Source{File: "testdata/good/ha.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.HA.Enabled() || c.HA.Node != "site-a.1" || c.HA.TakeoverPeriods != DefaultTakeover {
		t.Errorf("ha = %+v, want node site-a.1 and takeover_periods %d", c.HA, DefaultTakeover)
	}
	m, err := Load(Source{File: "testdata/good/minimal.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.HA.Enabled() || m.HA.TakeoverPeriods != 0 {
		t.Errorf("ha without a node = %+v, want off", m.HA)
	}
}

func TestDefaults(t *testing.T) {
	c, err := Load(Source{File: "testdata/good/minimal.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Plants[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"topic_prefix", c.TopicPrefix, "gbdmpc"},
		{"broker.listen", c.Broker.Listen, "127.0.0.1:1883"},
		{"http.listen", c.HTTP.Listen, "127.0.0.1:9464"},
		{"log.format", c.Log.Format, "json"},
		{"deadline", p.Deadline, 500 * time.Millisecond},
		{"max_age", p.MaxAge, time.Second},
		{"master", p.Master, "auto"},
		{"nlp", p.NLP, "native"},
		{"eps", p.Eps, 1e-3},
		{"mailbox", p.Mailbox, 4},
		{"error_rate", p.ErrorRate, 2.0},
		{"error_burst", p.ErrorBurst, 10},
		{"broker url", c.BrokerURL(), "tcp://127.0.0.1:1883"},
		{"topic", c.Topic("p1", "action"), "gbdmpc/p1/action"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	if !strings.HasPrefix(c.Broker.ClientID, "gbdmpc-") || DefaultClientID() == DefaultClientID() {
		t.Errorf("client id %q is not a unique gbdmpc-<host>-<pid>-<random>", c.Broker.ClientID)
	}
}

func TestRelativePathsFollowTheFile(t *testing.T) {
	c, err := Load(Source{File: "testdata/good/external_auth.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("testdata/good/secret.txt")
	got, _ := filepath.Abs(c.Broker.PasswordFile)
	if got != want {
		t.Errorf("password_file = %q, want %q", got, want)
	}
	pw, err := c.Broker.ResolvePassword()
	if err != nil || pw != "hunter2" {
		t.Errorf("ResolvePassword = %q, %v; want the file's trimmed content", pw, err)
	}
	if c.Plants[1].Policy != "builtin:default" {
		t.Errorf("builtin policy rewritten as a path: %q", c.Plants[1].Policy)
	}
	params, err := c.Plants[1].ParamsJSON()
	if err != nil || string(params) != `{"area_m2":60}` {
		t.Errorf("params = %s, %v", params, err)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	t.Setenv("GBDMPC_BROKER_EMBEDDED", "false")
	t.Setenv("GBDMPC_BROKER_URL", "tcp://10.0.0.5:1883")
	t.Setenv("GBDMPC_LOG_LEVEL", "debug")
	t.Setenv("GBDMPC_BROKER_KEEPALIVE", "7s")
	t.Setenv("GBDMPC_DECISION_LOG_COMPRESS", "true")
	c, err := Load(Source{File: "testdata/good/minimal.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Broker.Embedded || c.Broker.URL != "tcp://10.0.0.5:1883" {
		t.Errorf("broker = %+v, want the environment's external URL", c.Broker)
	}
	if c.Log.Level != "debug" || c.Broker.KeepAlive != 7*time.Second || !c.DecisionLog.Compress {
		t.Errorf("log.level %q keepalive %v compress %v: environment not applied", c.Log.Level, c.Broker.KeepAlive, c.DecisionLog.Compress)
	}
}

func TestFlagAndMapOverrides(t *testing.T) {
	t.Setenv("GBDMPC_HTTP_LISTEN", "127.0.0.1:1111")
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	RegisterFlags(fs)
	fs.String("unrelated", "", "")
	if err := fs.Parse([]string{"--http-listen", "127.0.0.1:2222", "--log-format", "console", "--unrelated", "x"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Source{File: "testdata/good/minimal.yaml", Flags: fs,
		Overrides: map[string]any{"topic_prefix": "site/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.Listen != "127.0.0.1:2222" {
		t.Errorf("http.listen = %q: a flag must beat the environment", c.HTTP.Listen)
	}
	if c.Log.Format != "console" || c.TopicPrefix != "site/a" {
		t.Errorf("log.format %q topic_prefix %q", c.Log.Format, c.TopicPrefix)
	}
	// Unset flags must not replace file values with their zero defaults.
	if !c.Broker.Embedded {
		t.Error("broker.embedded reset by an unset flag")
	}
}

func TestGoFlagOverrides(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	RegisterGoFlags(fs)
	if err := fs.Parse([]string{"-broker-embedded=false", "-broker-url", "tcp://b:1883", "-log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Source{File: "testdata/good/minimal.yaml", GoFlags: fs, NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Broker.Embedded || c.Broker.URL != "tcp://b:1883" || c.Log.Level != "warn" {
		t.Errorf("broker %+v log %+v", c.Broker, c.Log)
	}
}

func TestOverridesBuildAWholeConfig(t *testing.T) {
	c, err := Load(Source{NoEnv: true, Overrides: map[string]any{
		"broker.embedded": true,
		"broker.listen":   "127.0.0.1:0",
		"plants": []map[string]any{
			{"id": "s", "family": "synthesis", "period": "1s", "deadline": "800ms"},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plants) != 1 || c.Plants[0].Deadline != 800*time.Millisecond {
		t.Fatalf("plants = %+v", c.Plants)
	}
}

// TestPlantSolverKeys: a plant's solver keys, as the example configs write them, reach its
// solver.Spec, and a config reads each exactly as that spec's flags would.
func TestPlantSolverKeys(t *testing.T) {
	c, err := Load(Source{NoEnv: true, Overrides: map[string]any{
		"broker.embedded": true,
		"plants": []map[string]any{{"id": "p", "family": "pumpstation", "period": "1s", "master": "staged", "nlp": "ipopt", "cuts": "stage",
			"eps": 0.002, "eps_tol": 3e-6, "tmin": "70ms", "tmax": "90ms", "agent_patience": 4, "agent_candidates": 32, "agent_polish": true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := solver.Spec{Master: "staged", NLP: "ipopt", Cuts: "stage", Eps: 0.002, EpsTol: 3e-6, TMin: 70 * time.Millisecond, TMax: 90 * time.Millisecond,
		AgentPatience: 4, AgentCandidates: 32, AgentPolish: true}
	if got := c.Plants[0].Spec; got != want {
		t.Errorf("spec %+v, want %+v", got, want)
	}
	b, err := json.Marshal(c.Plants[0])
	if err != nil || !strings.Contains(string(b), `"eps_tol":0.000003`) || strings.Contains(string(b), `"Spec"`) {
		t.Errorf("a plant's JSON does not keep the solver keys flat: %s, %v", b, err)
	}
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	c := &Config{families: fixtureFamilies, Plants: []Plant{{ID: "p", Family: "nope", Period: time.Second, Deadline: 2 * time.Second, Spec: solver.Spec{NLP: "mumps"}}}}
	c.ApplyDefaults()
	err := c.Validate()
	for _, want := range []string{"broker.url: required", `family "nope"`, "must be shorter than period", `nlp "mumps": want native or ipopt`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestSecretsRedacted(t *testing.T) {
	const pw = "s3cr3t-Pa55"
	t.Setenv("GBDMPC_BROKER_PASSWORD", pw)
	c, err := Load(Source{Overrides: map[string]any{
		"broker.url":      "tcp://broker:1883",
		"broker.username": "user",
		"plants":          []map[string]any{{"id": "p", "family": "pumpstation", "period": "1s"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Broker.Password.Reveal() != pw {
		t.Fatalf("password from the environment not read")
	}
	// A password written into the URL is lifted out of it.
	inURL, err := Load(Source{NoEnv: true, Overrides: map[string]any{
		"broker.url": "tcp://user:" + pw + "@broker:1883",
		"plants":     []map[string]any{{"id": "p", "family": "pumpstation", "period": "1s"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if inURL.Broker.Password.Reveal() != pw || inURL.Broker.Username != "user" || strings.Contains(inURL.Broker.URL, pw) {
		t.Fatalf("URL password not lifted: %+v", inURL.Broker)
	}
	r := c.Redacted()
	js, _ := json.Marshal(r)
	core, logs := observer.New(zapcore.DebugLevel)
	zap.New(core).Info("config", zap.Any("config", r), zap.Stringer("password", c.Broker.Password))
	var logged strings.Builder
	for _, e := range logs.All() {
		enc, _ := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()).EncodeEntry(e.Entry, e.Context)
		logged.Write(enc.Bytes())
	}
	for name, s := range map[string]string{
		"json":      string(js),
		"%v":        fmt.Sprintf("%v", r),
		"%+v":       fmt.Sprintf("%+v", *c),
		"%#v":       fmt.Sprintf("%#v", c.Broker),
		"zap":       logged.String(),
		"url field": r.Broker.URL,
	} {
		if strings.Contains(s, pw) {
			t.Errorf("%s view leaks the password: %s", name, s)
		}
	}
	if !strings.Contains(string(js), "redacted") {
		t.Errorf("json view does not show that a password is set: %s", js)
	}
}

// The shipped examples must at least decode; the external one names files that exist only on a
// configured host, so its validation may fail only on those.
func TestExampleConfigs(t *testing.T) {
	for _, f := range []string{"pumpstation-embedded.yaml", "pumpstation-model.yaml", "microgrid.yaml", "building-cooling.yaml", "synthesis.yaml"} {
		if _, err := Load(Source{File: f, NoEnv: true}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	_, err := Load(Source{File: "pumpstation-external.yaml", NoEnv: true})
	if err == nil {
		return
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.Contains(line, "no such file or directory") {
			t.Errorf("pumpstation-external.yaml: unexpected problem %q", line)
		}
	}
}
