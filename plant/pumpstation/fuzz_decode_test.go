package pumpstation

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecode: Decode never panics, every rejection wraps ErrInstance with a message, and every
// accepted instance has the configured lengths, finite values inside the physical ranges, and a
// canonical form that decodes to the same instance.
func FuzzDecode(f *testing.F) {
	good := `{"v":1,"level_m":3,"pumps_on":[0,1,0],"demand_m3h":[80,80,80,80,80,80,80,80,80,80,80,80,80,80,80,80],"price_eur_kwh":[0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2]}`
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, `"level_m":3`, `"level_m":1e999`, 1)))
	f.Add([]byte(strings.Replace(good, `[0,1,0]`, `[0,0.5,1]`, 1)))
	f.Add([]byte(strings.Replace(good, `[0,1,0]`, `[0,1]`, 1)))
	f.Add([]byte(strings.Replace(good, `"v":1`, `"v":2`, 1)))
	f.Add([]byte(strings.Replace(good, `"level_m":3,`, ``, 1)))
	f.Add([]byte(strings.Replace(good, `[80,`, `[-1,`, 1)))
	f.Add([]byte(good + ` {}`))
	f.Add([]byte(`null`))
	c := DefaultConfig()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return
		}
		in, err := Decode(data, &c)
		if err != nil {
			if err.Error() == "" || !strings.Contains(err.Error(), ErrInstance.Error()) {
				t.Fatalf("rejection %q does not say what is wrong or does not wrap ErrInstance", err)
			}
			return
		}
		if in.V != 1 || len(in.PumpsOn) != c.NP() || len(in.Demand) != c.Horizon || len(in.Price) != c.Horizon {
			t.Fatalf("accepted instance has the wrong shape: %+v", in)
		}
		if !finite(in.Level) || in.Level < c.PhysMin || in.Level > c.PhysMax {
			t.Fatalf("accepted level %v outside [%v, %v]", in.Level, c.PhysMin, c.PhysMax)
		}
		for _, s := range [][]float64{in.Demand, in.Price} {
			for _, x := range s {
				if !finite(x) || x < 0 {
					t.Fatalf("accepted series value %v", x)
				}
			}
		}
		for _, v := range in.PumpsOn {
			if v != 0 && v != 1 {
				t.Fatalf("accepted pump state %d", v)
			}
		}
		// The canonical form round-trips: decision logs and `gbdmpc solve` rely on it.
		canon := MarshalInstance(in)
		again, err := Decode(canon, &c)
		if err != nil {
			t.Fatalf("canonical form %s does not decode: %v", canon, err)
		}
		if !bytes.Equal(MarshalInstance(again), canon) {
			t.Fatalf("canonical form is not stable: %s vs %s", MarshalInstance(again), canon)
		}
		// Exactly one JSON value: anything accepted must be valid JSON as a whole.
		if !json.Valid(data) {
			t.Fatalf("accepted input that is not one JSON value: %q", data)
		}
	})
}

// TestDecodeRejectsTrailingCloser: the contract (specs/interfaces.md §1) gives a malformed line an
// error result, and Decode means to refuse trailing data. It checks with json.Decoder.More, which
// answers false when the next byte is ']' or '}' (it is meant for the inside of arrays and
// objects), so `{…valid…}]` and `{…valid…}}x` are accepted as the valid object.
func TestDecodeRejectsTrailingCloser(t *testing.T) {
	c := DefaultConfig()
	good := `{"v":1,"level_m":3,"pumps_on":[0,1,0],"demand_m3h":[80,80,80,80,80,80,80,80,80,80,80,80,80,80,80,80],"price_eur_kwh":[0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2]}`
	for _, tail := range []string{"]", "}", " ] garbage", "}}"} {
		if _, err := Decode([]byte(good+tail), &c); err == nil {
			t.Errorf("Decode accepted the object followed by %q", tail)
		}
	}
}
