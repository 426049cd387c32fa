package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// refEnvelope is the envelope check as it was before the scanner, kept as the reference the one-pass
// scanner is tested against: the payload decoded into a map for the envelope, decoded again into
// `any` to look for non-finite values. (It no longer counts an underflow to zero, 1e-999, as
// non-finite; the scanner does not either: such a number is finite, and a family field holding
// one fails the family's decode as invalid. And it calls the payload `null` what it is, not a JSON
// object, where the map decode let it through to "missing v".)
func refEnvelope(payload []byte) (Envelope, *Rejection) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil || raw == nil {
		return Envelope{}, Reject(ReasonJSON, nil, "not a JSON object: %v", err)
	}
	var env Envelope
	var seqp *uint64
	if s, ok := raw["seq"]; ok {
		if n, err := strconv.ParseUint(string(bytes.TrimSpace(s)), 10, 64); err == nil {
			env.Seq, seqp = n, &n
		}
	}
	v, ok := raw["v"]
	if !ok {
		return env, Reject(ReasonMissing, seqp, `missing "v"`)
	}
	if f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64); err != nil || f != 1 {
		return env, Reject(ReasonVersion, seqp, `"v" is %s, want 1`, truncate(v))
	}
	if _, ok := raw["seq"]; !ok {
		return env, Reject(ReasonMissing, nil, `missing "seq"`)
	}
	if seqp == nil {
		return env, Reject(ReasonInvalid, nil, `"seq" is %s`, truncate(raw["seq"]))
	}
	ts, ok := raw["ts_ms"]
	if !ok {
		return env, Reject(ReasonMissing, seqp, `missing "ts_ms"`)
	}
	if env.TSms, ok = parseInt(ts); !ok {
		return env, Reject(ReasonInvalid, seqp, `"ts_ms" is %s`, truncate(ts))
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var tree any
	if dec.Decode(&tree) == nil && refNonFinite(tree) {
		return env, Reject(ReasonNonFinite, seqp, "not a finite number")
	}
	return env, nil
}

func refNonFinite(v any) bool {
	switch x := v.(type) {
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return math.IsInf(f, 0)
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity":
			return true
		}
	case []any:
		for _, e := range x {
			if refNonFinite(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if refNonFinite(e) {
				return true
			}
		}
	}
	return false
}

var scanSeeds = []string{
	`{"v":1,"seq":3,"ts_ms":1700000000000}`,
	`{"v":1.0,"seq":3,"ts_ms":1.7e12}`,
	` {"v":1,"seq":3,"ts_ms":1} `,
	`{"v":1,"seq":3,"ts_ms":1,"x":{"y":[1,-1e400]}}`,
	`{"v":1,"seq":3,"ts_ms":1,"x":[{"a":" -Infinity "}]}`,
	`{"v":1,"seq":3,"ts_ms":1,"x":"\u004eaN"}`,
	`{"v":1,"seq":3,"ts_ms":1,"x":1e-999}`,
	`{"v":1,"seq":3,"seq":4,"ts_ms":1}`,
	`{"v":1,"seq":3,"ts_ms":1}{}`,
	`{"v":1,"seq":3,"ts_ms":1,}`,
	`{"v":01,"seq":3,"ts_ms":1}`,
	`{"v":1,"seq":3,"ts_ms":1,"s":"a\qb"}`,
	"{\"v\":1,\"seq\":3,\"ts_ms\":1,\"s\":\"tab\there\"}",
	`{"v":1,"seq":3,"ts_ms":-}`,
	`{"v":1,"seq":3,"ts_ms":1.}`,
	`{"v":1,"seq":3,"ts_ms":1e}`,
	`{"v":tru}`,
	`[1,2,3]`,
	`"str"`,
	``,
	`{`,
	`{"v":1,"seq":3,"ts_ms":1,"x":[[[[]]]],"y":{},"z":null,"w":true,"u":false}`,
	`{"v":1,"seq":18446744073709551615,"ts_ms":9007199254740993}`,
	`{"v":1,"seq":18446744073709551616,"ts_ms":1}`,
	"{\"v\":1,\"seq\":3,\"ts_ms\":1,\"bad\":\"\xff\xfe\"}",
}

// checkScanAgainstReference: the scanner accepts exactly the payloads encoding/json reads as one
// JSON object, and the envelope check rejects for the same reason with the same seq as the
// reference.
func checkScanAgainstReference(t *testing.T, payload []byte) {
	_, err := scanMeasurement(payload)
	var obj map[string]json.RawMessage
	refErr := json.Unmarshal(payload, &obj)
	if refErr == nil && obj == nil {
		refErr = errors.New("null is not an object")
	}
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%q: scanner error %v, encoding/json error %v", payload, err, refErr)
	}
	env, rej := DecodeEnvelope(payload)
	renv, rrej := refEnvelope(payload)
	switch {
	case (rej == nil) != (rrej == nil):
		t.Fatalf("%q: got %v, reference %v", payload, rej, rrej)
	case rej != nil && (rej.Reason != rrej.Reason || (rej.Seq == nil) != (rrej.Seq == nil) || rej.Seq != nil && *rej.Seq != *rrej.Seq):
		t.Fatalf("%q: got %v (seq %v), reference %v (seq %v)", payload, rej, rej.Seq, rrej, rrej.Seq)
	case rej == nil && env != renv:
		t.Fatalf("%q: envelope %+v, reference %+v", payload, env, renv)
	}
}

func TestScanMatchesReference(t *testing.T) {
	for _, s := range scanSeeds {
		checkScanAgainstReference(t, []byte(s))
	}
	// Nesting as deep as encoding/json allows, and one level deeper.
	deep := func(n int) []byte {
		return []byte(`{"v":1,"seq":1,"ts_ms":1,"d":` + strings.Repeat("[", n) + strings.Repeat("]", n) + "}")
	}
	checkScanAgainstReference(t, deep(9000))
	checkScanAgainstReference(t, deep(10001))
}

// TestScanNonFinitePath: the error names where the first non-finite value is, in document order.
func TestScanNonFinitePath(t *testing.T) {
	cases := map[string]string{
		`{"v":1,"seq":1,"ts_ms":1,"level_m":1e999}`:                    `"level_m"`,
		`{"v":1,"seq":1,"ts_ms":1,"demand_m3h":[1,2,"NaN"],"p":"inf"}`: `"demand_m3h"[2]`,
		`{"v":1,"seq":1,"ts_ms":1,"x":[{"y":{"z":"-Infinity"}}]}`:      `"x"[0]."y"."z"`,
		`{"v":1,"seq":1,"ts_ms":1,"a\"b":"nan"}`:                       `"a\"b"`,
	}
	for payload, want := range cases {
		sc, err := scanMeasurement([]byte(payload))
		if err != nil || sc.nonFinite != want {
			t.Errorf("%s: path %q (%v), want %q", payload, sc.nonFinite, err, want)
		}
	}
}

func FuzzScanMatchesReference(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"seq":7,"ts_ms":1700000000000,"v":1,"level_m":2.5,"pumps_on":[0,1,0],"demand_m3h":[80,90],"price_eur_kwh":[0.1,0.2]}`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > fuzzMaxBytes {
			return
		}
		checkScanAgainstReference(t, payload)
	})
}

// BenchmarkEnvelope measures the envelope check of a pump-station measurement, as it was (three
// decodes) and as it is (one pass), side by side; the family's decode comes on top of either.
func BenchmarkEnvelope(b *testing.B) {
	payload := []byte(`{"seq":7,"ts_ms":1700000000000,"v":1,"level_m":2.5,"pumps_on":[0,1,0],"demand_m3h":[80,90,85,70,60,55,50,52,60,75,90,100,110,105,95,85],"price_eur_kwh":[0.1,0.1,0.1,0.1,0.12,0.15,0.2,0.25,0.25,0.2,0.18,0.15,0.15,0.18,0.22,0.25]}`)
	for _, c := range []struct {
		name     string
		envelope func([]byte) (Envelope, *Rejection)
	}{{"three-decodes", refEnvelope}, {"one-pass", DecodeEnvelope}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, rej := c.envelope(payload); rej != nil {
					b.Fatal(rej)
				}
			}
		})
	}
	b.Run("junk-rejected", func(b *testing.B) {
		junk := []byte(`{"v":1,"seq":`)
		b.ReportAllocs()
		for b.Loop() {
			if _, rej := DecodeEnvelope(junk); rej == nil {
				b.Fatal("junk accepted")
			}
		}
	})
}

// TestEnvelope: each kind of broken envelope is rejected for its reason, with the message's seq
// when it could be read.
func TestEnvelope(t *testing.T) {
	cases := []struct {
		payload, reason string
		seq             bool
	}{
		{`{"v":1,"seq":3,"ts_ms":1700000000000}`, "", true},
		{`{"v":1.0,"seq":3,"ts_ms":1.7e12}`, "", true},
		{`nope`, ReasonJSON, false},
		{`{"v":1,"seq":3,"ts_ms":1}{}`, ReasonJSON, false},
		{`{"v":"1","seq":3,"ts_ms":1}`, ReasonVersion, true},
		{`{"seq":3,"ts_ms":1}`, ReasonMissing, true},
		{`{"v":1,"seq":-3,"ts_ms":1}`, ReasonInvalid, false},
		{`{"v":1,"seq":3.5,"ts_ms":1}`, ReasonInvalid, false},
		{`{"v":1,"seq":3,"ts_ms":"now"}`, ReasonInvalid, true},
		{`{"v":1,"seq":3,"ts_ms":1,"x":{"y":[1,-1e400]}}`, ReasonNonFinite, true},
		{`{"v":1,"seq":3,"ts_ms":1,"x":"-Infinity"}`, ReasonNonFinite, true},
		{`{"v":1,"seq":3,"ts_ms":1,"x":"nan"}`, ReasonNonFinite, true},
		{`{"v":1,"seq":3,"ts_ms":1,"plant":"station-north"}`, "", true},
	}
	for _, c := range cases {
		_, rej := DecodeEnvelope([]byte(c.payload))
		switch {
		case c.reason == "" && rej != nil:
			t.Errorf("%s: rejected %v", c.payload, rej)
		case c.reason != "" && (rej == nil || rej.Reason != c.reason):
			t.Errorf("%s: got %v, want reason %s", c.payload, rej, c.reason)
		case rej != nil && (rej.Seq != nil) != c.seq:
			t.Errorf("%s: seq known = %v, want %v", c.payload, rej.Seq != nil, c.seq)
		}
	}
}

// fuzzMaxBytes bounds a fuzz input: MQTT payloads of real plants are a few hundred bytes, and
// the properties are about structure, not size.
const fuzzMaxBytes = 4 << 10
