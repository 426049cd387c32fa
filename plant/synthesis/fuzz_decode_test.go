package synthesis

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// FuzzDecode: Decode never panics, every rejection wraps ErrInstance with a message, and every
// accepted instance has five finite γ, a positive finite U, two non-negative finite ρ, and a
// problem that validates.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25,4],"U":10,"rho":[1.2,0.5]}`))
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25],"U":10,"rho":[1.2,0.5]}`))
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25,4],"U":0,"rho":[1.2,0.5]}`))
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25,4],"U":10,"rho":[-1e-300,0.5]}`))
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25,1e999],"U":10,"rho":[1,1]}`))
	f.Add([]byte(`{"v":1,"gamma":[10,20,15,25,4],"U":10,"rho":[1,1]} {}`))
	f.Add([]byte(`{"gamma":[10,20,15,25,4],"U":10,"rho":[1,1]}`))
	f.Add([]byte(`{"v":1.5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4<<10 {
			return
		}
		in, err := Decode(data)
		if err != nil {
			if err.Error() == "" || !errors.Is(err, ErrInstance) {
				t.Fatalf("rejection %q does not wrap ErrInstance", err)
			}
			return
		}
		fin := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
		if in.V != 1 || len(in.Gamma) != NY || len(in.Rho) != 2 || !fin(in.U) || in.U <= 0 {
			t.Fatalf("accepted instance %+v", in)
		}
		for _, g := range in.Gamma {
			if !fin(g) {
				t.Fatalf("accepted γ %v", g)
			}
		}
		for _, r := range in.Rho {
			if !fin(r) || r < 0 {
				t.Fatalf("accepted ρ %v", r)
			}
		}
		if err := Problem(in).Validate(); err != nil {
			t.Fatalf("accepted instance's problem is invalid: %v", err)
		}
		if _, err := Decode(MarshalInstance(in)); err != nil {
			t.Fatalf("canonical form %s does not decode: %v", MarshalInstance(in), err)
		}
		// Exactly one JSON value: anything accepted must be valid JSON as a whole.
		if !json.Valid(data) {
			t.Fatalf("accepted input that is not one JSON value: %q", data)
		}
	})
}

// TestDecodeRejectsTrailingCloser: strictUnmarshal (decode.go) means "exactly one JSON object and
// nothing after it", but json.Decoder.More answers false when the next byte is ']' or '}', so a
// valid instance followed by "]" or "}" is accepted — by `gbdmpc solve` and by the daemon's family
// decoder alike (the daemon's envelope check refuses it first, `gbdmpc solve` does not).
func TestDecodeRejectsTrailingCloser(t *testing.T) {
	for _, tail := range []string{"]", "}", " ]]", "} trailing"} {
		if _, err := Decode([]byte(`{"v":1,"gamma":[10,20,15,25,4],"U":10,"rho":[1,1]}` + tail)); err == nil {
			t.Errorf("Decode accepted the instance followed by %q", tail)
		}
	}
}
