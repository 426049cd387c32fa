package telemetry

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// Num is a float64 that survives JSON when it is not finite. A GBD run starts with LBD = −Inf and a
// master problem can be unbounded, and encoding/json refuses such values, which would lose the whole
// record. ±Inf encode as the strings "+Inf" and "-Inf", NaN as null; decoding accepts any JSON number,
// those strings, "NaN" and null.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return strconv.AppendFloat(make([]byte, 0, 24), f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *Num) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null", `"NaN"`:
		*n = Num(math.NaN())
		return nil
	case `"+Inf"`:
		*n = Num(math.Inf(1))
		return nil
	case `"-Inf"`:
		*n = Num(math.Inf(-1))
		return nil
	}
	if len(b) == 0 || b[0] == '"' {
		return fmt.Errorf("telemetry: %s is not a number, \"+Inf\", \"-Inf\", \"NaN\" or null", b)
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("telemetry: %s is not a number: %w", b, err)
	}
	*n = Num(f)
	return nil
}

// Float returns n as a float64.
func (n Num) Float() float64 { return float64(n) }

// Nums converts a slice of float64 to a slice of Num.
func Nums(xs []float64) []Num {
	if xs == nil {
		return nil
	}
	out := make([]Num, len(xs))
	for i, x := range xs {
		out[i] = Num(x)
	}
	return out
}
