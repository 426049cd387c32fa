package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func seeded() *rand.Rand { return rand.New(rand.NewPCG(37, 1)) }

const goodMeasurement = `{"v":1,"seq":3,"ts_ms":1,"soc":5,"ch":0,"dis":1,"load":[1,2,3,4],"price":[0.1,0.2,0.3,0.4]}`

func TestDecode(t *testing.T) {
	fam, err := Load("testdata/good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m, err := fam.Model().Decode([]byte(goodMeasurement))
	if err != nil {
		t.Fatal(err)
	}
	if m.States[0] != 5 || m.On[0] != 0 || m.On[1] != 1 || len(m.Forecasts[1]) != 4 || math.Abs(m.Forecasts[1][3]-0.4) > 1e-15 {
		t.Errorf("decoded %+v", m)
	}
	// The canonical instance reads back as itself.
	again, err := fam.Model().Decode(fam.Model().MarshalInstance(&m))
	if err != nil || again.States[0] != m.States[0] || again.On[1] != m.On[1] {
		t.Errorf("round trip: %+v, %v", again, err)
	}
	for _, c := range []struct{ name, payload, want string }{
		{"not an object", `[1]`, "want a JSON object"},
		{"missing v", strings.Replace(goodMeasurement, `"v":1,`, ``, 1), `missing "v"`},
		{"wrong v", strings.Replace(goodMeasurement, `"v":1`, `"v":2`, 1), `"v" is 2`},
		{"missing state", strings.Replace(goodMeasurement, `"soc":5,`, ``, 1), `missing "soc" (state)`},
		{"missing unit", strings.Replace(goodMeasurement, `"dis":1,`, ``, 1), `missing "dis" (unit)`},
		{"missing forecast", strings.Replace(goodMeasurement, `,"load":[1,2,3,4]`, ``, 1), `missing "load" (forecast)`},
		{"duplicate", strings.Replace(goodMeasurement, `"soc":5`, `"soc":5,"soc":6`, 1), `"soc" appears twice`},
		{"case", strings.Replace(goodMeasurement, `"soc":5`, `"soc":5,"SOC":6`, 1), `case-sensitive`},
		{"string number", strings.Replace(goodMeasurement, `"soc":5`, `"soc":"5"`, 1), `"soc" must be a number`},
		{"null", strings.Replace(goodMeasurement, `"soc":5`, `"soc":null`, 1), `"soc"`},
		{"overflow", strings.Replace(goodMeasurement, `"soc":5`, `"soc":1e999`, 1), `"soc" is not a finite number`},
		{"state out of range", strings.Replace(goodMeasurement, `"soc":5`, `"soc":10.5`, 1), `outside its physical range [0, 10]`},
		{"unit half on", strings.Replace(goodMeasurement, `"ch":0`, `"ch":0.5`, 1), `"ch" = 0.5, want 0 or 1`},
		{"short forecast", strings.Replace(goodMeasurement, `[1,2,3,4]`, `[1,2,3]`, 1), `"load" has 3 values, want 4`},
		{"forecast out of range", strings.Replace(goodMeasurement, `[1,2,3,4]`, `[1,2,30,4]`, 1), `"load"[2] = 30 is outside its range [0, 10]`},
		{"forecast not a list", strings.Replace(goodMeasurement, `[1,2,3,4]`, `4`, 1), `"load" must be a list of 4 numbers`},
		{"forecast element string", strings.Replace(goodMeasurement, `[1,2,3,4]`, `[1,"2",3,4]`, 1), `"load[1]" must be a number`},
		{"input in a measurement", strings.Replace(goodMeasurement, `"soc":5`, `"soc":5,"grid":1`, 1), `"grid" is an input`},
		{"trailing data", goodMeasurement + `}`, "trailing data"},
		{"truncated", goodMeasurement[:40], "unexpected end of JSON input"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := fam.DecodeMeasurement([]byte(c.payload))
			if err == nil || !errors.Is(err, ErrInstance) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an ErrInstance containing %q", err, c.want)
			}
		})
	}
}

// FuzzDecodeMeasurement: DecodeMeasurement never panics, rejects with ErrInstance, and whatever it
// accepts is within the model's ranges and transcribes into a valid problem.
func FuzzDecodeMeasurement(f *testing.F) {
	fam, err := Load("testdata/good.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(goodMeasurement))
	f.Add([]byte(`{"v":1,"soc":0,"ch":1,"dis":0,"load":[0,0,0,0],"price":[1,1,1,1]}`))
	f.Add([]byte(`{"v":1,"soc":0,"soc":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		mm, err := fam.DecodeMeasurement(data)
		if err != nil {
			if !errors.Is(err, ErrInstance) {
				t.Fatalf("error %v does not wrap ErrInstance", err)
			}
			return
		}
		in := mm.(*Measurement).Inst
		m := fam.Model()
		for i, s := range m.States {
			if !(in.States[i] >= s.Lo && in.States[i] <= s.Hi) {
				t.Fatalf("state %s = %v accepted", s.Name, in.States[i])
			}
		}
		for _, on := range in.On {
			if on != 0 && on != 1 {
				t.Fatalf("unit state %d accepted", on)
			}
		}
		for i, fc := range m.Forecasts {
			if len(in.Forecasts[i]) != m.Horizon {
				t.Fatalf("forecast %s has %d values", fc.Name, len(in.Forecasts[i]))
			}
			for _, v := range in.Forecasts[i] {
				if !(v >= fc.Lo && v <= fc.Hi) {
					t.Fatalf("forecast %s value %v accepted", fc.Name, v)
				}
			}
		}
		p, _ := mm.Problem()
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}
