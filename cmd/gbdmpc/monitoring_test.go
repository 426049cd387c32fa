package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"go.uber.org/zap/zaptest"
	"go.yaml.in/yaml/v3"

	"gbdmpc/configs"
	"gbdmpc/controller"
)

// The monitoring files shipped beside the unit (and installed to /usr/share/gbdmpc by the package).
var (
	alertsFile     = filepath.Join("..", "..", "systemd", "gbdmpc-alerts.yml")
	alertTestsFile = filepath.Join("..", "..", "systemd", "gbdmpc-alerts.test.yml")
	dashboardFile  = filepath.Join("..", "..", "systemd", "gbdmpc-dashboard.json")
)

// notFromDaemon are names a query may use that the daemon does not export: Prometheus adds `up`
// to every scrape itself.
var notFromDaemon = []string{"up"}

// pendingMetrics are named by the rules or the dashboard ahead of the daemon (a metric added on
// another branch). The check fails as soon as the daemon exports one of them, so the list empties
// itself.
var pendingMetrics = []string{}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found: it comes with Debian's prometheus package, which `make deps-test` installs")
	}
	return p
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return rf
}

// TestAlertRules runs promtool on the rules and on their unit tests, and checks that every rule
// has a case where it fires and one where it stays quiet.
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertTestsFile}} {
		out, err := exec.Command(pt, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	b, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tf struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tf); err != nil {
		t.Fatal(err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tf.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	rules := 0
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			rules++
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: firing case %v, quiet case %v in %s; want both", r.Alert, fires[r.Alert], quiet[r.Alert], alertTestsFile)
			}
		}
	}
	if rules == 0 {
		t.Fatalf("%s has no rules", alertsFile)
	}
}

// dashboardQueries returns every PromQL query of the dashboard: panel targets (rows included) and
// the metric of each label_values() variable, by panel title.
func dashboardQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Type       string `json:"type"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		UID        string            `json:"uid"`
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" {
		t.Error("dashboard has no uid (Grafana would create a new dashboard on every import)")
	}
	q := map[string][]string{}
	ids := map[int]bool{}
	var walk func(raw []json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("panel %s: %v", r, err)
			}
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not use the ${datasource} variable", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if tg.RefID == "" || strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q: target %q without refId or expr", p.Title, tg.Expr)
				}
				q[p.Title] = append(q[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_]\w*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var qq struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &qq); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(qq.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(METRIC, LABEL)", v.Name, qq.Query)
		}
		q["variable "+v.Name] = append(q["variable "+v.Name], m[1])
	}
	if len(q) == 0 {
		t.Fatal("dashboard has no queries")
	}
	return q
}

// grafanaVars stands in for the dashboard's variables, so its queries parse as plain PromQL.
var grafanaVars = strings.NewReplacer("$instance", ".+", "$plant", "p1", "$window", "1h", "${datasource}", "prom")

// TestDashboardQueriesParse hands every dashboard query to promtool as a recording rule: promtool
// parses PromQL exactly as Prometheus will, which the name scan below does not.
func TestDashboardQueriesParse(t *testing.T) {
	pt := promtool(t)
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for _, exprs := range dashboardQueries(t) {
		for _, e := range exprs {
			rules = append(rules, rule{Record: fmt.Sprintf("dashboard:q%d", len(rules)), Expr: grafanaVars.Replace(e)})
		}
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pt, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("dashboard queries do not parse: %v\n%s", err, out)
	}
}

// TestPromQLNames pins the name scan on the constructs the rules and dashboard use.
func TestPromQLNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`up{job="gbdmpc"} == 0`, []string{"up"}},
		{`sum by (le) (rate(a_bucket{plant="$plant", x=~"{b}"}[$window]))`, []string{"a_bucket"}},
		{`histogram_quantile(0.95, sum by (instance, le) (rate(h_bucket[1h]))) > 0.9 * d_seconds`, []string{"d_seconds", "h_bucket"}},
		{`(time() - ts > 3 * p) or (3 * p < on (instance, job) group_left () (time() - start) unless on (instance, job, plant) ts)`, []string{"p", "start", "ts"}},
		{`sum without (kind) (increase(f_total[30m] offset 5m)) > 1e-3 and bool x`, []string{"f_total", "x"}},
		{`a / ignoring(reason) group_right b`, []string{"a", "b"}},
		{`count by (instance) (m{instance=~"$instance"})`, []string{"m"}},
	} {
		got := promqlNames(c.expr)
		if !slices.Equal(got, c.want) {
			t.Errorf("promqlNames(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}

// promqlNames returns the metric names a PromQL expression selects, sorted and unique: identifiers
// that are not functions or aggregations (followed by a parenthesis), not keywords, not inside a
// label matcher {…}, a range […], a string or a grouping label list, and not Grafana variables.
func promqlNames(expr string) []string {
	// Aggregation operators may be followed by a grouping clause rather than their parenthesis
	// (`sum by (le) (…)`); PromQL reserves their names, so none of them can be a metric.
	keywords := map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "atan2": true, "sum": true, "min": true, "max": true, "avg": true, "group": true,
		"stddev": true, "stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true}
	grouping := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	// skipTo returns the index after the bracket closing the one at i, stepping over strings.
	skipTo := func(i int, open, close byte) int {
		depth := 0
		for ; i < len(expr); i++ {
			switch c := expr[i]; c {
			case '"', '\'', '`':
				for i++; i < len(expr) && expr[i] != c; i++ {
					if expr[i] == '\\' && c != '`' {
						i++
					}
				}
			case open:
				depth++
			case close:
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	nextNonSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\t' || expr[i] == '\n' || expr[i] == '\r') {
			i++
		}
		return i
	}
	seen := map[string]bool{}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			i = j + 1
		case c == '{':
			i = skipTo(i, '{', '}')
		case c == '[':
			i = skipTo(i, '[', ']')
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i = skipTo(i, '{', '}')
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			// Numbers, exponents and durations (5m, 1e-3, 0x1f).
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.' ||
				(expr[i] == '-' || expr[i] == '+') && (expr[i-1] == 'e' || expr[i-1] == 'E')) {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word, k := expr[i:j], nextNonSpace(j)
			i = j
			switch {
			case grouping[strings.ToLower(word)]:
				if k < len(expr) && expr[k] == '(' {
					i = skipTo(k, '(', ')')
				}
			case keywords[strings.ToLower(word)]:
			case k < len(expr) && expr[k] == '(':
				// a function or aggregation; its arguments are scanned as they come
			default:
				seen[word] = true
			}
		default:
			i++
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestMonitoringNamesExported starts the daemon as `gbdmpc serve` does (same registry with the Go
// and process collectors, a YAML configuration through configs.Load, the embedded broker, the
// decision log), drives it through certified steps, fallbacks and a rejected message so that every
// labelled series exists, scrapes /metrics over HTTP and checks that every metric named by an alert
// rule or a dashboard query is among the scraped names.
func TestMonitoringNamesExported(t *testing.T) {
	dir := t.TempDir()
	// s1 solves (the oracle built-in policy drives the agent counters); s2 gets instances whose
	// MINLP is infeasible (ρ1, ρ2 < 1), so each of its steps falls back.
	cfgText := fmt.Sprintf(`
broker: {embedded: true, listen: "127.0.0.1:0"}
http: {listen: "127.0.0.1:0"}
log: {level: warn, format: json}
decision_log: {dir: %q, fsync: never}
plants:
  - {id: s1, family: synthesis, period: 5s, deadline: 4s, max_age: 30s, master: enum, policy: "builtin:oracle"}
  - {id: s2, family: synthesis, period: 5s, deadline: 4s, max_age: 30s, master: enum}
`, filepath.Join(dir, "decisions"))
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(configs.Source{File: cfgFile})
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
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}()
	var info controller.Info
	select {
	case info = <-started:
	case err := <-done:
		t.Fatalf("daemon did not start: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("daemon not ready within 30s")
	}

	actions := make(chan string, 16)
	opts := mqtt.NewClientOptions().AddBroker(info.BrokerURL).SetClientID("monitoring-test").SetConnectTimeout(5 * time.Second)
	client := mqtt.NewClient(opts)
	if tok := client.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer client.Disconnect(100)
	onAction := func(_ mqtt.Client, m mqtt.Message) {
		var a struct {
			Plant  string `json:"plant"`
			Status string `json:"status"`
		}
		_ = json.Unmarshal(m.Payload(), &a)
		actions <- a.Plant + " " + a.Status
	}
	if tok := client.Subscribe(cfg.TopicPrefix+"/+/action", 1, onAction); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	publish := func(plant, payload string) {
		tok := client.Publish(cfg.Topic(plant, "measurement"), 1, false, payload)
		if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatalf("publish: %v", tok.Error())
		}
	}
	for seq := 1; seq <= 2; seq++ {
		publish("s1", fmt.Sprintf(`{"v":1,"seq":%d,"ts_ms":%d,"gamma":[10,20,15,12,4],"U":10,"rho":[1.5,0.5]}`, seq, time.Now().UnixMilli()))
		publish("s2", fmt.Sprintf(`{"v":1,"seq":%d,"ts_ms":%d,"gamma":[10,20,15,12,4],"U":10,"rho":[0.5,0.5]}`, seq, time.Now().UnixMilli()))
	}
	publish("s1", `not json`)
	want := map[string]int{"s1 optimal": 2, "s2 fallback": 2}
	for got := map[string]int{}; !mapsEqual(got, want); {
		select {
		case a := <-actions:
			got[a]++
		case <-time.After(30 * time.Second):
			t.Fatalf("actions received %v, want %v", got, want)
		}
	}

	// The rejection and the last step's metrics are recorded just after the publishes the test saw:
	// scrape until the rejection is there.
	var exported map[string]bool
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		exported = scrape(t, "http://"+info.HTTPAddr+"/metrics")
		if exported["gbdmpc_controller_rejected_total"] && exported["gbdmpc_controller_certified_gap"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no rejection or certified gap in /metrics after 10s")
		}
	}

	used := map[string][]string{} // metric → where
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, n := range promqlNames(r.Expr) {
				used[n] = append(used[n], "alert "+r.Alert)
			}
		}
	}
	for title, exprs := range dashboardQueries(t) {
		for _, e := range exprs {
			names := promqlNames(e)
			if len(names) == 0 {
				t.Errorf("dashboard %q: query %q names no metric", title, e)
			}
			for _, n := range names {
				used[n] = append(used[n], "dashboard "+title)
			}
		}
	}
	for name, where := range used {
		slices.Sort(where)
		switch {
		case slices.Contains(notFromDaemon, name):
		case slices.Contains(pendingMetrics, name):
			if exported[name] {
				t.Errorf("%s is exported now: remove it from pendingMetrics", name)
			} else {
				t.Logf("%s (used by %s) is not exported yet: pending on another branch", name, strings.Join(slices.Compact(where), ", "))
			}
		case !exported[name]:
			t.Errorf("%s is not exported by the daemon; used by %s", name, strings.Join(slices.Compact(where), ", "))
		}
	}
	if len(used) < 20 {
		t.Errorf("only %d metric names found in the rules and dashboard: the name scan is broken", len(used))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// scrape returns the sample names of a Prometheus text exposition (histograms as their _bucket,
// _sum and _count series, as queries name them).
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}
