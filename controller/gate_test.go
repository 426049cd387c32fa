package controller

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/wire"
)

// FuzzGateTimestamp judges a valid pump-station measurement whose ts_ms is any int64, against a clock
// anywhere in a few centuries around now. The oracle is integer arithmetic on milliseconds, which
// cannot overflow here (the clock and max_age are both far from the int64 limits): a ts_ms within
// max_age either way, whose action can still be answered before it expires, is accepted; an older
// one is stale, a newer one is future and says by how much.
func FuzzGateTimestamp(f *testing.F) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		f.Fatal(err)
	}
	now := fuzzNow.UnixMilli()
	for _, ts := range []int64{now, now * 1000, now * 1_000_000, math.MaxInt64, math.MinInt64, math.MinInt64 + 1,
		0, -1, now + 5000, now + 5001, now - 5000, now - 5001, math.MaxInt64 - now} {
		f.Add(ts, int64(0))
	}
	f.Add(int64(math.MaxInt64), int64(-now))
	f.Fuzz(func(t *testing.T, ts, shift int64) {
		const maxAge = 5 * time.Second
		const maxAgeMs = int64(maxAge / time.Millisecond)
		// The clock stays within ±10¹³ ms (±317 years) of 1970, whole milliseconds.
		nowMs := now + shift%10_000_000_000_000
		clock := time.UnixMilli(nowMs)
		g := newGate(fuzzPlant(maxAge), fam, nil, nil)
		_, _, rej := g.judge(pumpMeasurement(1, time.UnixMilli(0), map[string]any{"ts_ms": ts}), clock)
		// ts − nowMs may overflow; compare against the bounds instead, which cannot.
		// Besides max_age, a measurement whose action (expiring one period after ts_ms) could not
		// be solved and published with deadline_reserve to spare twice is stale (expiry.go).
		p := fuzzPlant(maxAge)
		solvable := int64((p.Period - 2*p.DeadlineReserve) / time.Millisecond)
		var want string
		switch {
		case ts < nowMs-maxAgeMs || ts <= nowMs-solvable:
			want = wire.ReasonStale
		case ts > nowMs+maxAgeMs:
			want = wire.ReasonFuture
		}
		switch {
		case want == "" && rej != nil:
			t.Fatalf("ts_ms %d against a clock at %d ms, max_age %v: rejected (%v), want accepted", ts, nowMs, maxAge, rej)
		case want != "" && rej == nil:
			t.Fatalf("ts_ms %d against a clock at %d ms, max_age %v: accepted, want %s", ts, nowMs, maxAge, want)
		case want != "" && rej.Reason != want:
			t.Fatalf("ts_ms %d against a clock at %d ms: rejected %s (%s), want %s", ts, nowMs, rej.Reason, rej.Msg, want)
		case want == wire.ReasonFuture && !strings.Contains(rej.Msg, "ahead of the controller's clock"):
			t.Fatalf("future ts_ms %d: message %q does not say how far ahead", ts, rej.Msg)
		}
	})
}

// TestGateTimestampUnits: a ts_ms in microseconds or nanoseconds is future, and the message names the
// likely unit.
func TestGateTimestampUnits(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(fuzzPlant(time.Second), fam, nil, nil)
	now := fuzzNow
	for _, c := range []struct {
		ts   int64
		unit string
	}{{now.UnixMicro(), "microseconds"}, {now.UnixNano(), "nanoseconds"}} {
		_, _, rej := g.judge(pumpMeasurement(1, now, map[string]any{"ts_ms": c.ts}), now)
		if rej == nil || rej.Reason != wire.ReasonFuture || !strings.Contains(rej.Msg, c.unit) {
			t.Errorf("ts_ms %d (%s): %v, want future naming %s", c.ts, c.unit, rej, c.unit)
		}
	}
}

// TestGateRefusesOversizeBeforeParsing: a 13 MB measurement (a valid envelope, a forecast far too
// long) is rejected as too_large with its size in the message, and judging it allocates almost
// nothing: parsing it first cost about nine times its size.
func TestGateRefusesOversizeBeforeParsing(t *testing.T) {
	fam, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(fuzzPlant(time.Second), fam, nil, nil)
	payload := pumpMeasurement(1, fuzzNow, map[string]any{"demand_m3h": repeat(80.125, 2_000_000)})
	if len(payload) < 13<<20 {
		t.Fatalf("payload is %d bytes, want at least 13 MiB", len(payload))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, rej := g.judge(payload, fuzzNow)
	runtime.ReadMemStats(&after)
	if rej == nil || rej.Reason != wire.ReasonTooLarge || !strings.Contains(rej.Msg, strconv.Itoa(len(payload))) {
		t.Fatalf("13 MB payload: %v, want too_large naming its %d bytes", rej, len(payload))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("judging a %d-byte payload allocated %d bytes; it must be refused before parsing", len(payload), alloc)
	}
	// The limit itself is allowed: a valid measurement padded to exactly max_payload_bytes passes.
	ok := pumpMeasurement(1, fuzzNow, nil)
	padded := append(ok[:len(ok)-1:len(ok)-1], []byte(strings.Repeat(" ", configs.DefaultMaxPayload-len(ok))+"}")...)
	if _, _, rej := g.judge(padded, fuzzNow); rej != nil {
		t.Errorf("a %d-byte measurement (the limit) was rejected: %v", len(padded), rej)
	}
	if _, _, rej := g.judge(append(padded[:len(padded)-1:len(padded)-1], ' ', '}'), fuzzNow); rej == nil || rej.Reason != wire.ReasonTooLarge {
		t.Errorf("one byte over the limit: %v, want too_large", rej)
	}
}
