package wire

import (
	"encoding/json"
	"math"
	"testing"
)

// TestMeasurementEnvelope: the envelope's seq and ts_ms come first, the family's fields (its "v"
// included) follow unchanged, and anything but a JSON object is refused.
func TestMeasurementEnvelope(t *testing.T) {
	type fields struct {
		V     int       `json:"v"`
		Level float64   `json:"level_m"`
		On    []int     `json:"pumps_on"`
		D     []float64 `json:"demand_m3h"`
	}
	b, err := Measurement(7, 1700000000123, fields{1, 2.5, []int{0, 1}, []float64{80, 90}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":7,"ts_ms":1700000000123,"v":1,"level_m":2.5,"pumps_on":[0,1],"demand_m3h":[80,90]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if b, err := Measurement(1, 2, struct{}{}); err != nil || string(b) != `{"seq":1,"ts_ms":2}` {
		t.Errorf("empty object: %s %v", b, err)
	}
	for _, bad := range []any{[]int{1}, 3.0, "x", math.Inf(1)} {
		if _, err := Measurement(1, 2, bad); err == nil {
			t.Errorf("%v accepted as measurement fields", bad)
		}
	}
}

// TestFloatJSON: non-finite values travel as null and come back as NaN; finite ones round-trip.
func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal([]Float{1.5, Float(math.Inf(-1)), Float(math.NaN())})
	if err != nil || string(b) != `[1.5,null,null]` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var back []Float
	if err := json.Unmarshal(b, &back); err != nil || back[0] != 1.5 || !math.IsNaN(float64(back[1])) || !math.IsNaN(float64(back[2])) {
		t.Fatalf("unmarshal: %v %v", back, err)
	}
	var f Float
	if err := json.Unmarshal([]byte(`"x"`), &f); err == nil {
		t.Error("a string read as a Float")
	}
}
