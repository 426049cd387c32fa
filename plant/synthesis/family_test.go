package synthesis

import (
	"strings"
	"testing"
)

// TestDecodePlan: a published design reads back unchanged; damaged ones are refused.
func TestDecodePlan(t *testing.T) {
	f := NewFamily()
	y := f.Admissible().Float(0, make([]float64, NY))
	x := make([]float64, NX)
	for i := range x {
		x[i] = float64(i) / 3
	}
	p := &Plan{Y: y, X: x}
	back, err := f.DecodePlan(p.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if string(back.JSON()) != string(p.JSON()) {
		t.Errorf("round trip: %s, want %s", back.JSON(), p.JSON())
	}
	for _, raw := range []string{`null`, `{"y":null,"x":null}`, `{"y":[1],"x":[]}`, `[`, `{"y":[1,1,1,1,1],"x":[0,0,0,0,0,0]}`,
		`{"y":[0.5,0,0,0,0],"x":[0,0,0,0,0,0]}`} {
		if _, err := f.DecodePlan([]byte(raw)); err == nil || !strings.Contains(err.Error(), "synthesis: plan") {
			t.Errorf("%s: err = %v, want a synthesis plan error", raw, err)
		}
	}
}
