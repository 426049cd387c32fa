package controller

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"gbdmpc/configs"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/plant/synthesis"
	"gbdmpc/wire"
)

// fuzzNow is the daemon's clock in the measurement fuzzers: fixed, so that a seed's ts_ms stays
// within max_age and the fuzzer reaches the family decoder instead of stopping at "stale".
var fuzzNow = time.UnixMilli(1_700_000_000_000)

// fuzzMaxBytes bounds a fuzz input: MQTT payloads of real plants are a few hundred bytes, and
// the properties are about structure, not size.
const fuzzMaxBytes = 4 << 10

// fuzzPlant is the plant the fuzzers' gates judge for: a 1 s period, the given max_age, the
// defaults otherwise.
func fuzzPlant(maxAge time.Duration) *configs.Plant {
	return &configs.Plant{ID: "fz", Family: "pumpstation", Period: time.Second, Deadline: 500 * time.Millisecond,
		DeadlineReserve: 50 * time.Millisecond, MaxAge: maxAge, ErrorRate: 1, ErrorBurst: 1, MaxPayloadBytes: configs.DefaultMaxPayload}
}

var knownReasons = map[string]bool{
	wire.ReasonJSON: true, wire.ReasonVersion: true, wire.ReasonMissing: true, wire.ReasonNonFinite: true,
	wire.ReasonInvalid: true, wire.ReasonSeq: true, wire.ReasonStale: true, wire.ReasonFuture: true, wire.ReasonDeadline: true,
	wire.ReasonTooLarge: true,
}

// fuzzAccept runs the daemon's whole arrival check (gate.judge: envelope, seq, age, family decode) on one
// payload and checks the contract of specs/interfaces.md §2: a rejection has a known reason and a
// message; an accepted measurement is one JSON object whose family problem transcribes and
// validates.
func fuzzAccept(t *testing.T, fam mpc.Family, payload []byte, check func(*testing.T, mpc.Measurement)) {
	if len(payload) > fuzzMaxBytes {
		return
	}
	g := newGate(fuzzPlant(5*time.Second), fam, nil, nil)
	g.accept(10)
	m, env, rej := g.judge(payload, fuzzNow)
	if rej != nil {
		if m != nil {
			t.Fatalf("rejected (%v) but returned a measurement", rej)
		}
		if !knownReasons[rej.Reason] {
			t.Fatalf("rejection reason %q is not a documented one (%s)", rej.Reason, rej.Msg)
		}
		if rej.Msg == "" || rej.Error() == "" {
			t.Fatalf("rejection %q without a message", rej.Reason)
		}
		// The error topic's payload must always encode.
		if _, err := json.Marshal(wire.ErrorMessage{V: 1, Seq: rej.Seq, Error: rej.Msg, Reason: rej.Reason}); err != nil {
			t.Fatalf("error message does not encode: %v", err)
		}
		return
	}
	if m == nil {
		t.Fatal("accepted without a measurement")
	}
	if !json.Valid(payload) {
		t.Fatalf("accepted a payload that is not one JSON value: %q", payload)
	}
	if env.Seq <= 10 {
		t.Fatalf("accepted seq %d not greater than the last accepted 10", env.Seq)
	}
	if age := fuzzNow.Sub(time.UnixMilli(env.TSms)); age > 5*time.Second || -age > 5*time.Second {
		t.Fatalf("accepted ts_ms %d, %v away from the clock", env.TSms, age)
	}
	if inst := m.Instance(); !json.Valid(inst) || string(inst) == "null" {
		t.Fatalf("accepted measurement's canonical instance is %q", inst)
	}
	p, err := m.Problem()
	if err != nil {
		t.Fatalf("accepted measurement does not transcribe: %v", err)
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("accepted measurement's problem is invalid: %v", err)
	}
	check(t, m)
}

func allFinite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

func FuzzAcceptPumpStation(f *testing.F) {
	cfg := pumpstation.DefaultConfig()
	fam, err := pumpstation.NewFamily(cfg)
	if err != nil {
		f.Fatal(err)
	}
	ts := fuzzNow
	f.Add(pumpMeasurement(11, ts, nil))
	f.Add(pumpMeasurement(12, ts, map[string]any{"level_m": json.RawMessage("1e999")}))
	f.Add(pumpMeasurement(12, ts, map[string]any{"pumps_on": []float64{0, 0.5, 1}}))
	f.Add(pumpMeasurement(12, ts, map[string]any{"demand_m3h": repeat(80, 15)}))
	f.Add(pumpMeasurement(12, ts, map[string]any{"price_eur_kwh": "NaN"}))
	f.Add(pumpMeasurement(3, ts, nil))
	f.Add(pumpMeasurement(12, ts.Add(-time.Hour), nil))
	f.Add(pumpMeasurement(12, ts, map[string]any{"level_m": nil}))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fuzzAccept(t, fam, payload, func(t *testing.T, m mpc.Measurement) {
			var in pumpstation.Instance
			if err := json.Unmarshal(m.Instance(), &in); err != nil {
				t.Fatalf("canonical instance: %v", err)
			}
			if in.V != 1 || len(in.PumpsOn) != cfg.NP() || len(in.Demand) != cfg.Horizon || len(in.Price) != cfg.Horizon {
				t.Fatalf("accepted instance has the wrong shape: %+v", in)
			}
			if !allFinite(in.Level) || !allFinite(in.Demand...) || !allFinite(in.Price...) {
				t.Fatalf("accepted instance is not finite: %+v", in)
			}
			if err := in.Validate(&cfg); err != nil {
				t.Fatalf("accepted instance does not validate again: %v", err)
			}
		})
	})
}

func FuzzAcceptSynthesis(f *testing.F) {
	fam := synthesis.NewFamily()
	ms := func(s string) []byte {
		return []byte(`{"v":1,"seq":11,"ts_ms":1700000000000,` + s + `}`)
	}
	f.Add(ms(`"gamma":[10,20,15,25,4],"U":10,"rho":[1.2,0.5]`))
	f.Add(ms(`"gamma":[10,20,15,25],"U":10,"rho":[1.2,0.5]`))
	f.Add(ms(`"gamma":[10,20,15,25,4],"U":-1,"rho":[1.2,0.5]`))
	f.Add(ms(`"gamma":[10,20,15,25,4],"U":10,"rho":[-1,0.5]`))
	f.Add(ms(`"gamma":[10,20,15,25,4],"U":"Infinity","rho":[1,1]`))
	f.Add(ms(`"gamma":[10,20,15,25,4],"U":1e400,"rho":[1,1]`))
	f.Add([]byte(`{"v":1,"seq":-1,"ts_ms":1700000000000}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		fuzzAccept(t, fam, payload, func(t *testing.T, m mpc.Measurement) {
			in := m.(*synthesis.Measurement).Inst
			if in.V != 1 || len(in.Gamma) != synthesis.NY || len(in.Rho) != 2 {
				t.Fatalf("accepted instance has the wrong shape: %+v", in)
			}
			if !allFinite(in.Gamma...) || !allFinite(in.U) || !allFinite(in.Rho...) || in.U <= 0 || in.Rho[0] < 0 || in.Rho[1] < 0 {
				t.Fatalf("accepted instance outside its documented ranges: %+v", in)
			}
		})
	})
}
