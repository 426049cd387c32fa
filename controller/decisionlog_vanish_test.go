package controller

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/telemetry"
	"gbdmpc/wire"
)

// TestDecisionLogDirectoryRemoved is issue 38's `rm -rf` of the decision-log directory under a
// running daemon (on its embedded broker: the broker plays no part in it). The next record notices that its segment is gone, counts a
// write error and is written to a new segment in the recreated directory; the status carries an
// alarm naming the removal, cleared at the next check since writing works; every record counted
// after the removal is on disk.
func TestDecisionLogDirectoryRemoved(t *testing.T) {
	testsupport.NoLeaks(t)
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: 2 * time.Second, MaxAge: 5 * time.Second})
	cfg.DecisionLog.Dir = filepath.Join(t.TempDir(), "log")
	d := startDaemon(t, cfg, fakeDeps(newFakeStepper(optimalDecision)))
	statusTopic := cfg.Topic("p1", "status")
	obs := newTopicLog(t, d.info.BrokerURL, statusTopic)
	t.Cleanup(func() { obs.c.Disconnect(50) }) // before the daemon stops its broker (cleanups run last first)

	d.publish("p1", pumpMeasurement(1, time.Now(), nil))
	d.expectAction("p1", 1)
	before := d.waitAtLeast(1, "gbdmpc_decisionlog_records_total")
	if before < 1 {
		t.Fatal("no record written before the removal")
	}
	if err := os.RemoveAll(cfg.DecisionLog.Dir); err != nil {
		t.Fatal(err)
	}

	d.publish("p1", pumpMeasurement(2, time.Now(), nil))
	d.expectAction("p1", 2)
	if got := d.waitAtLeast(1, "gbdmpc_decisionlog_write_errors_total"); got != 1 {
		t.Errorf("write_errors_total %v after the removal, want 1", got)
	}
	alarms := func(m [][]byte) (raised, cleared bool) {
		for _, b := range m {
			var st wire.Status
			if json.Unmarshal(b, &st) != nil {
				continue
			}
			if strings.Contains(st.Alarm, "decision log") && strings.Contains(st.Alarm, "removed") {
				raised = true
			} else if raised && st.Alarm == "" {
				cleared = true
			}
		}
		return raised, cleared
	}
	if !obs.waitFor(statusTopic, 10*time.Second, func(m [][]byte) bool { _, c := alarms(m); return c }) {
		raised, _ := alarms(obs.get(statusTopic))
		t.Fatalf("status alarm raised=%v, then cleared=false; want it raised naming the removal and cleared", raised)
	}
	after := d.waitAtLeast(before+1, "gbdmpc_decisionlog_records_total")
	r, err := telemetry.NewReader(cfg.DecisionLog.Dir)
	if err != nil {
		t.Fatalf("the directory was not recreated: %v", err)
	}
	recs, err := r.ReadAll(telemetry.Filter{})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if float64(len(recs)) != after-before || len(recs) == 0 || recs[0].Step != 2 {
		t.Errorf("%d records on disk after the removal, %v counted as written; want them equal, from step 2", len(recs), after-before)
	}
	if h := d.counter("gbdmpc_decisionlog_healthy"); h != 1 {
		t.Errorf("healthy %v after writing to the new segment", h)
	}
	obs.c.Disconnect(50)
	d.stop()
}
