package controller

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/internal/testsupport"
	"gbdmpc/wire"
)

// TestHostFaults sends, through the broker (the embedded one: mosquitto's own limits are not what
// it checks), what issue 38 found from outside:
// ts_ms in microseconds and nanoseconds, measurements too old to be answered before their actions
// expire (though within max_age), and a 1 MiB payload. Each gets one error message saying what was
// wrong and no action; a valid measurement after them is answered.
func TestHostFaults(t *testing.T) {
	testsupport.NoLeaks(t)
	// max_age 5 s, so that only the expiry (ts_ms + period 1 s) can make the old ones stale.
	cfg := testsupport.EmbeddedConfig(configs.Plant{ID: "p1", Family: "pumpstation", Period: time.Second, MaxAge: 5 * time.Second})
	d := startDaemon(t, cfg, fakeDeps(newFakeStepper(optimalDecision)))
	obs := newTopicLog(t, d.info.BrokerURL, cfg.Topic("p1", "action"), cfg.Topic("p1", "error"))
	pub := publisher(t, d.info.BrokerURL)
	// Before the daemon stops its broker (cleanups run last first).
	t.Cleanup(func() { obs.c.Disconnect(50); pub.Disconnect(50) })

	now := time.Now()
	big := pumpMeasurement(5, now, map[string]any{"demand_m3h": repeat(80.125, 150_000)})
	cases := []struct {
		payload []byte
		reason  string
		says    string
	}{
		{pumpMeasurement(1, now, map[string]any{"ts_ms": now.UnixMicro()}), wire.ReasonFuture, "microseconds"},
		{pumpMeasurement(2, now, map[string]any{"ts_ms": now.UnixNano()}), wire.ReasonFuture, "nanoseconds"},
		{pumpMeasurement(3, now.Add(-960*time.Millisecond), nil), wire.ReasonStale, "would expire at"},
		{pumpMeasurement(4, now.Add(-1200*time.Millisecond), nil), wire.ReasonStale, "would expire at"},
		{big, wire.ReasonTooLarge, strconv.Itoa(len(big)) + " bytes"},
	}
	var lines [][]byte
	for _, c := range cases {
		lines = append(lines, c.payload)
	}
	publishAll(t, pub, cfg.Topic("p1", "measurement"), lines)
	errTopic := cfg.Topic("p1", "error")
	if !obs.waitFor(errTopic, 10*time.Second, func(m [][]byte) bool { return len(m) >= len(cases) }) {
		t.Fatalf("%d error messages, want %d", len(obs.get(errTopic)), len(cases))
	}
	for i, b := range obs.get(errTopic) {
		var e wire.ErrorMessage
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		if c := cases[i]; e.Reason != c.reason || !strings.Contains(e.Error, c.says) {
			t.Errorf("error %d: %s %q, want %s saying %q", i, e.Reason, e.Error, c.reason, c.says)
		}
	}
	publishAll(t, pub, cfg.Topic("p1", "measurement"), [][]byte{pumpMeasurement(6, time.Now(), nil)})
	if !obs.waitFor(cfg.Topic("p1", "action"), 10*time.Second, func(m [][]byte) bool { return actionFor(m, 6) }) {
		t.Fatal("no action for the valid measurement after them")
	}
	if acts := obs.get(cfg.Topic("p1", "action")); len(acts) != 1 {
		t.Errorf("%d actions, want only the one for measurement 6", len(acts))
	}
	obs.c.Disconnect(50)
	pub.Disconnect(50)
	d.stop()
}
