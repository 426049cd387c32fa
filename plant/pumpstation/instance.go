package pumpstation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"gbdmpc/internal/strictjson"
)

// Instance is one measurement with its forecasts, in the JSON form of specs/interfaces.md:
//
//	{"v":1,"level_m":h0,"pumps_on":[0,1,0],"demand_m3h":[N values],"price_eur_kwh":[N values]}
//
// A measurement carries "seq" and "ts_ms" as well; they belong to the daemon's envelope and are
// ignored here.
type Instance struct {
	V       int       `json:"v"`
	Level   float64   `json:"level_m"`
	PumpsOn []int     `json:"pumps_on"`
	Demand  []float64 `json:"demand_m3h"`
	Price   []float64 `json:"price_eur_kwh"`
}

// ErrInstance is wrapped by every validation error of an instance or measurement.
var ErrInstance = errors.New("invalid pumpstation instance")

func instErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInstance, fmt.Sprintf(format, a...))
}

// Validate checks the instance against the configuration: version, array lengths, finiteness and
// physical ranges. Each error names the offending field (and element).
func (in *Instance) Validate(c *Config) error {
	if in.V != 1 {
		return instErr(`"v" is %d, want 1`, in.V)
	}
	if !finite(in.Level) {
		return instErr(`"level_m" is not finite`)
	}
	if in.Level < c.PhysMin || in.Level > c.PhysMax {
		return instErr(`"level_m" = %v is outside the tank's physical range [%v, %v] m`, in.Level, c.PhysMin, c.PhysMax)
	}
	if len(in.PumpsOn) != c.NP() {
		return instErr(`"pumps_on" has %d values, want %d`, len(in.PumpsOn), c.NP())
	}
	for i, v := range in.PumpsOn {
		if v != 0 && v != 1 {
			return instErr(`"pumps_on"[%d] = %d, want 0 or 1`, i, v)
		}
	}
	if err := checkSeries("demand_m3h", in.Demand, c.Horizon, c.DemandMax, "m³/h"); err != nil {
		return err
	}
	return checkSeries("price_eur_kwh", in.Price, c.Horizon, c.PriceMax, "€/kWh")
}

func checkSeries(name string, v []float64, n int, max float64, unit string) error {
	if len(v) != n {
		return instErr("%q has %d values, want %d", name, len(v), n)
	}
	for i, x := range v {
		switch {
		case !finite(x):
			return instErr("%q[%d] is not finite", name, i)
		case x < 0:
			return instErr("%q[%d] = %v is negative", name, i, x)
		case x > max:
			return instErr("%q[%d] = %v exceeds the configured maximum %v %s", name, i, x, max, unit)
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// wireInstance distinguishes a missing field from a zero one (a level of 0 m is a valid reading, a
// missing level is not) and reads pump states as numbers so that 0.5 is reported, not truncated.
type wireInstance struct {
	V       *int      `json:"v"`
	Level   *float64  `json:"level_m"`
	PumpsOn []float64 `json:"pumps_on"`
	Demand  []float64 `json:"demand_m3h"`
	Price   []float64 `json:"price_eur_kwh"`
}

// Decode parses one instance or measurement (exactly one JSON object, its field names exact and
// given once; unknown fields such as "seq" and "ts_ms" are allowed: internal/strictjson) and
// validates it against c.
func Decode(data []byte, c *Config) (Instance, error) {
	var w wireInstance
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return Instance{}, instErr("%v", err)
	}
	switch {
	case w.V == nil:
		return Instance{}, instErr(`missing "v"`)
	case w.Level == nil:
		return Instance{}, instErr(`missing "level_m"`)
	case w.PumpsOn == nil:
		return Instance{}, instErr(`missing "pumps_on"`)
	case w.Demand == nil:
		return Instance{}, instErr(`missing "demand_m3h"`)
	case w.Price == nil:
		return Instance{}, instErr(`missing "price_eur_kwh"`)
	}
	in := Instance{V: *w.V, Level: *w.Level, Demand: w.Demand, Price: w.Price, PumpsOn: make([]int, len(w.PumpsOn))}
	for i, v := range w.PumpsOn {
		if v != 0 && v != 1 {
			return Instance{}, instErr(`"pumps_on"[%d] = %v, want 0 or 1`, i, v)
		}
		in.PumpsOn[i] = int(v)
	}
	if err := in.Validate(c); err != nil {
		return Instance{}, err
	}
	return in, nil
}

// MarshalInstance is the canonical JSON of an instance (what `gbdmpc solve` reads and decision logs
// store).
func MarshalInstance(in Instance) json.RawMessage {
	b, err := json.Marshal(in)
	if err != nil {
		// Only non-finite numbers fail to marshal, and validated instances have none.
		return json.RawMessage(`null`)
	}
	return b
}
