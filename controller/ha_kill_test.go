package controller

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/plant/synthesis"
	"gbdmpc/wire"
)

// haPlant is a synthesis plant publishing a measurement every period, whatever happens to its
// controllers, and recording every action and status it sees.
type haPlant struct {
	t      *testing.T
	c      mqtt.Client
	prefix string

	mu       sync.Mutex
	sent     map[uint64]time.Time // measurement seq → published
	actions  []haSeen
	statuses []wire.Status
	// offline is when each offline status (a Last Will or a shutdown) arrived, by node.
	offline []haSeenStatus
	changed chan struct{}

	stop     chan struct{}
	done     chan struct{}
	haltOnce sync.Once
}

type haSeenStatus struct {
	node string
	at   time.Time
}

type haSeen struct {
	wire.Action
	at time.Time
	// epoch is the action's fencing token (0: none).
	epoch uint64
}

func newHAPlant(t *testing.T, url, prefix, plant string) *haPlant {
	t.Helper()
	p := &haPlant{t: t, prefix: prefix + "/" + plant + "/", sent: map[uint64]time.Time{}, changed: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	o := mqtt.NewClientOptions().AddBroker(url).SetClientID("ha-plant-" + randomHex(3)).SetCleanSession(true).
		SetAutoReconnect(true).SetOrderMatters(true)
	p.c = subscribedClient(t, o, map[string]byte{p.prefix + "action": 1, p.prefix + "status": 1}, func(_ mqtt.Client, m mqtt.Message) {
		now := time.Now()
		p.mu.Lock()
		if strings.HasSuffix(m.Topic(), "/status") {
			var s wire.Status
			if json.Unmarshal(m.Payload(), &s) == nil {
				p.statuses = append(p.statuses, s)
				if s.State == wire.StateOffline {
					p.offline = append(p.offline, haSeenStatus{s.Node, now})
				}
			}
		} else {
			var a wire.Action
			var fence struct {
				Epoch uint64 `json:"epoch"`
			}
			if json.Unmarshal(m.Payload(), &a) == nil && json.Unmarshal(m.Payload(), &fence) == nil {
				p.actions = append(p.actions, haSeen{Action: a, at: now, epoch: fence.Epoch})
			}
		}
		p.mu.Unlock()
		poke(p.changed)
	}, "plant client")
	return p
}

// run publishes synthesis measurements seq 1, 2, … every period until stopped.
func (p *haPlant) run(period time.Duration, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	p.runWith(period, func(seq uint64, now time.Time) []byte {
		in := synthesis.SampleFeasible(rng)
		b, _ := json.Marshal(map[string]any{"v": 1, "seq": seq, "ts_ms": now.UnixMilli(), "gamma": in.Gamma, "U": in.U, "rho": in.Rho})
		return b
	})
}

// runWith publishes measure(seq, now) for seq 1, 2, … every period until stopped. The ticker is the
// plant's own clock, not a synchronisation device: the test waits on what it observes.
func (p *haPlant) runWith(period time.Duration, measure func(seq uint64, now time.Time) []byte) {
	go func() {
		defer close(p.done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for seq := uint64(1); ; seq++ {
			now := time.Now()
			payload := measure(seq, now)
			p.mu.Lock()
			p.sent[seq] = now
			p.mu.Unlock()
			p.c.Publish(p.prefix+"measurement", 1, false, payload).WaitTimeout(time.Second)
			poke(p.changed)
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
}

// halt stops the plant's publishing and waits for it; calling it again does nothing.
func (p *haPlant) halt() {
	p.haltOnce.Do(func() {
		close(p.stop)
		<-p.done
	})
}

// haConfig is an in-process HA daemon's configuration: one pump station p1 on an external broker,
// no HTTP.
func haConfig(url, clientID, node string, takeover int, reconnect, period, deadline time.Duration) *configs.Config {
	c := &configs.Config{
		Broker: configs.Broker{URL: url, ClientID: clientID, MaxReconnectInterval: reconnect},
		HTTP:   configs.HTTP{Listen: "off"},
		HA:     configs.HA{Node: node, TakeoverPeriods: takeover},
		Plants: []configs.Plant{{ID: "p1", Family: "pumpstation", Period: period, Deadline: deadline, MaxAge: 5 * time.Second}},
	}
	c.ApplyDefaults()
	return c
}

// offlineAfter is when the first offline status of node arrived after t (zero: none yet).
func (p *haPlant) offlineAfter(node string, t time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range p.offline {
		if o.node == node && o.at.After(t) {
			return o.at
		}
	}
	return time.Time{}
}

// lastSent is the highest measurement seq published so far.
func (p *haPlant) lastSent() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return uint64(len(p.sent))
}

// waitSent waits until measurement seq has been published (acknowledged by the broker).
func (p *haPlant) waitSent(seq uint64, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		if p.lastSent() >= seq {
			return true
		}
		select {
		case <-p.changed:
		case <-deadline:
			return false
		}
	}
}

// waitAction waits until some action from node (any node when empty) answers a measurement seq
// of at least from, and returns it.
func (p *haPlant) waitAction(node string, from uint64, timeout time.Duration) (wire.Action, bool) {
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		for _, a := range p.actions {
			if a.MeasurementSeq >= from && (node == "" || a.Node == node) {
				p.mu.Unlock()
				return a.Action, true
			}
		}
		p.mu.Unlock()
		select {
		case <-p.changed:
		case <-deadline:
			return wire.Action{}, false
		}
	}
}

// actionTime is when the plant received the action with this seq (zero: not seen).
func (p *haPlant) actionTime(seq uint64) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, a := range p.actions {
		if a.Seq == seq {
			return a.at
		}
	}
	return time.Time{}
}

func (p *haPlant) snapshot() ([]haSeen, []wire.Status, map[uint64]time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := make(map[uint64]time.Time, len(p.sent))
	for k, v := range p.sent {
		sent[k] = v
	}
	return slices.Clone(p.actions), slices.Clone(p.statuses), sent
}

func haConfigFile(t *testing.T, dir, url, node string, period time.Duration, takeover int) string {
	t.Helper()
	return haConfigFileWith(t, dir, haFile{url: url, node: node, period: period, takeover: takeover})
}

// haFile is a `gbdmpc serve` configuration for one synthesis plant s1 in an HA group.
type haFile struct {
	url, node string
	period    time.Duration
	deadline  time.Duration // default period·6/10
	takeover  int
	keepalive time.Duration // default 2s
	http      string        // http.listen (default off)
}

func haConfigFileWith(t *testing.T, dir string, f haFile) string {
	t.Helper()
	if f.deadline == 0 {
		f.deadline = f.period * 6 / 10
	}
	if f.keepalive == 0 {
		f.keepalive = 2 * time.Second
	}
	if f.http == "" {
		f.http = "off"
	}
	body := fmt.Sprintf(`broker:
  url: %s
  client_id: gbdmpc-ha-%s
  max_reconnect_interval: 200ms
  keepalive: %s
http:
  listen: "%s"
log:
  level: info
policy_watch: 0s
ha:
  node: %s
  takeover_periods: %d
plants:
  - id: s1
    family: synthesis
    period: %s
    deadline: %s
    max_age: 5s
`, f.url, f.node, f.keepalive, f.http, f.node, f.takeover, f.period, f.deadline)
	path := filepath.Join(dir, "ha-"+f.node+".yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHAKillActiveStandbyTakesOver runs two `gbdmpc serve` processes for one plant against
// mosquitto, started together from nothing, with a plant publishing every period throughout:
//
//  1. exactly one of them becomes active and answers;
//  2. the active one is SIGKILLed mid-run: the broker publishes its Last Will and the standby
//     takes over, continuing from the killed one's last plan;
//  3. the killed one restarts: it sees the retained status of the new active one and stays standby;
//  4. the active one is stopped with SIGTERM: its offline status hands the plant back.
//
// Over the whole run no measurement gets two actions, action seqs never repeat and only grow, and
// no run of unanswered measurements is longer than the take-over bound.
func TestHAKillActiveStandbyTakesOver(t *testing.T) {
	testsupport.Long(t, "builds the daemon and runs two of them")
	const (
		period   = 400 * time.Millisecond
		takeover = 2
	)
	broker := testsupport.StartMosquitto(t)
	defer broker.Kill()
	bin := testsupport.BuildDaemon(t)
	dir := t.TempDir()
	cfg := map[string]string{
		"a": haConfigFile(t, dir, broker.URL(), "a", period, takeover),
		"b": haConfigFile(t, dir, broker.URL(), "b", period, takeover),
	}
	logs := map[string]string{"a": filepath.Join(dir, "a.log"), "b": filepath.Join(dir, "b.log")}
	procs := map[string]*daemonProc{}
	defer func() {
		for _, p := range procs {
			if p != nil && p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if t.Failed() {
			for n, f := range logs {
				b, _ := os.ReadFile(f)
				t.Logf("daemon %s log:\n%s", n, b)
			}
		}
	}()

	plant := newHAPlant(t, broker.URL(), "gbdmpc", "s1")
	defer plant.c.Disconnect(50)
	procs["a"] = startDaemonProc(t, bin, cfg["a"], logs["a"])
	procs["b"] = startDaemonProc(t, bin, cfg["b"], logs["b"])
	plant.run(period, 41)
	defer plant.halt()

	// 1. One of them takes the plant.
	first, ok := plant.waitAction("", 1, 30*time.Second)
	if !ok {
		t.Fatal("no action within 30s of starting both daemons")
	}
	active, standby := first.Node, map[string]string{"a": "b", "b": "a"}[first.Node]
	if active == "" || standby == "" {
		t.Fatalf("first action from node %q", first.Node)
	}
	t.Logf("phase 1: %s active from measurement %d", active, first.MeasurementSeq)
	if _, ok := plant.waitAction(active, plant.lastSent()+8, 20*time.Second); !ok {
		t.Fatalf("%s stopped answering", active)
	}

	// 2. SIGKILL the active daemon mid-run: just after a measurement reached the broker, so
	// (a synthesis solve taking tens of milliseconds) most likely in the middle of its solve.
	killedAt := plant.lastSent() + 1
	if !plant.waitSent(killedAt, 10*time.Second) {
		t.Fatal("the plant stopped publishing")
	}
	killTime := time.Now()
	if err := procs[active].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-procs[active].done
	procs[active] = nil
	a2, ok := plant.waitAction(standby, killedAt, 20*time.Second)
	if !ok {
		t.Fatalf("standby %s did not take over after %s was killed", standby, active)
	}
	t.Logf("phase 2: %s killed just after measurement %d was published; %s answered from %d, %v after the kill",
		active, killedAt, standby, a2.MeasurementSeq, plant.actionTime(a2.Seq).Sub(killTime).Round(time.Millisecond))
	if _, ok := plant.waitAction(standby, plant.lastSent()+6, 20*time.Second); !ok {
		t.Fatalf("%s stopped answering after the take-over", standby)
	}

	// 3. Restart the killed one: it must stay standby.
	restartAt := plant.lastSent()
	procs[active] = startDaemonProc(t, bin, cfg[active], logs[active])
	if _, ok := plant.waitAction(standby, plant.lastSent()+8, 20*time.Second); !ok {
		t.Fatalf("%s stopped answering after %s restarted", standby, active)
	}
	if a, ok := plant.waitAction(active, restartAt, 0); ok {
		t.Errorf("restarted %s answered measurement %d while %s was active", active, a.MeasurementSeq, standby)
	}

	// 4. SIGTERM the active one: the restarted one takes over.
	termAt := plant.lastSent()
	if err := procs[standby].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-procs[standby].done; err != nil {
		t.Errorf("%s did not stop cleanly on SIGTERM: %v", standby, err)
	}
	procs[standby] = nil
	a4, ok := plant.waitAction(active, termAt, 20*time.Second)
	if !ok {
		t.Fatalf("%s did not take over after %s stopped", active, standby)
	}
	if _, ok := plant.waitAction(active, plant.lastSent()+5, 20*time.Second); !ok {
		t.Fatalf("%s stopped answering after taking over", active)
	}
	plant.halt()
	t.Logf("phase 4: %s stopped after measurement %d; %s answered from %d", standby, termAt, active, a4.MeasurementSeq)

	actions, statuses, sent := plant.snapshot()
	checkHARun(t, actions, sent, first.MeasurementSeq, takeover, true)

	// The retained status names the active daemon.
	if n := len(statuses); n == 0 || statuses[n-1].Node != active || statuses[n-1].State == wire.StateOffline {
		t.Errorf("last status %+v, want %s online", statuses[len(statuses)-1], active)
	}
	for _, node := range []string{standby, active} {
		b, _ := os.ReadFile(logs[node])
		if !strings.Contains(string(b), "continuing from the previous active daemon's plan") {
			t.Errorf("%s's log does not show it continued from the previous active daemon's plan", node)
		}
	}
}

// checkHARun asserts the HA invariants over every action a plant saw: at most one action per
// measurement, action seqs unique (and increasing in the order seen, when monotone), and (from
// the first answered measurement on) no more than takeover+1 consecutive measurements without an
// action.
func checkHARun(t *testing.T, actions []haSeen, sent map[uint64]time.Time, from uint64, takeover int, monotone bool) {
	t.Helper()
	by := map[uint64][]string{}
	seqs := map[uint64]bool{}
	var last uint64
	for i, a := range actions {
		by[a.MeasurementSeq] = append(by[a.MeasurementSeq], fmt.Sprintf("%s#%d", a.Node, a.Seq))
		if seqs[a.Seq] {
			t.Errorf("action seq %d (node %s, measurement %d) repeats", a.Seq, a.Node, a.MeasurementSeq)
		}
		seqs[a.Seq] = true
		if monotone && i > 0 && a.Seq <= last {
			t.Errorf("action seq %d (node %s, measurement %d) after seq %d: not increasing", a.Seq, a.Node, a.MeasurementSeq, last)
		}
		last = a.Seq
	}
	for m, who := range by {
		if len(who) > 1 {
			t.Errorf("measurement %d answered %d times: %v", m, len(who), who)
		}
	}
	// The last few measurements may still be in flight when the plant stopped.
	top := uint64(len(sent))
	for top > from && len(by[top]) == 0 {
		top--
	}
	gap, worst, worstAt := 0, 0, uint64(0)
	for m := from; m <= top; m++ {
		if len(by[m]) == 0 {
			gap++
			if gap > worst {
				worst, worstAt = gap, m
			}
		} else {
			gap = 0
		}
	}
	t.Logf("%d actions for measurements %d..%d; longest run without an action: %d measurements (ending at %d)",
		len(actions), from, top, worst, worstAt)
	if worst > takeover+1 {
		t.Errorf("%d consecutive measurements without an action (ending at %d), beyond the take-over bound of %d",
			worst, worstAt, takeover+1)
	}
}
