package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// ErrInstance is wrapped by every validation error of a model's measurement or instance.
var ErrInstance = errors.New("invalid model instance")

func instErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInstance, fmt.Sprintf(format, a...))
}

// Decode parses one measurement or instance of the model: exactly one JSON object with "v": 1, every
// state's measured value (a number within its range), every unit's current state (0 or 1) and
// every forecast (N numbers within its range), by name. Names are exact and given once; other
// members (seq, ts_ms, fields a producer adds) are skipped.
func (m *Model) Decode(data []byte) (Instance, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return Instance{}, instErr("%v", syntaxErr(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Instance{}, instErr("want a JSON object")
	}
	in := Instance{States: make([]float64, len(m.States)), On: make([]int, len(m.Units)),
		Forecasts: make([][]float64, len(m.Forecasts))}
	seen := map[string]bool{}
	lower := map[string]string{"v": "v"}
	for name := range m.names {
		lower[strings.ToLower(name)] = name
	}
	var version *int
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Instance{}, instErr("%v", syntaxErr(err))
		}
		name := tok.(string)
		if seen[name] {
			return Instance{}, instErr("member %q appears twice", name)
		}
		seen[name] = true
		r, known := m.names[name]
		if !known && name != "v" {
			if f, near := lower[strings.ToLower(name)]; near {
				return Instance{}, instErr("unknown member %q: member names are case-sensitive (the field is %q)", name, f)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return Instance{}, instErr("%v", syntaxErr(err))
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Instance{}, instErr("%v", syntaxErr(err))
		}
		if name == "v" {
			v, err := number(raw, name)
			if err != nil {
				return Instance{}, err
			}
			if v != 1 {
				return Instance{}, instErr(`"v" is %v, want 1`, v)
			}
			one := 1
			version = &one
			continue
		}
		switch r.kind {
		case kindState:
			s := &m.States[r.idx]
			v, err := number(raw, name)
			if err != nil {
				return Instance{}, err
			}
			if v < s.Lo || v > s.Hi {
				return Instance{}, instErr("%q = %v is outside its physical range [%v, %v]", name, v, s.Lo, s.Hi)
			}
			in.States[r.idx] = v
		case kindUnit:
			v, err := number(raw, name)
			if err != nil {
				return Instance{}, err
			}
			if v != 0 && v != 1 {
				return Instance{}, instErr("%q = %v, want 0 or 1", name, v)
			}
			in.On[r.idx] = int(v)
		case kindForecast:
			f := &m.Forecasts[r.idx]
			var vs []json.RawMessage
			if err := json.Unmarshal(raw, &vs); err != nil || vs == nil {
				return Instance{}, instErr("%q must be a list of %d numbers", name, m.Horizon)
			}
			if len(vs) != m.Horizon {
				return Instance{}, instErr("%q has %d values, want %d", name, len(vs), m.Horizon)
			}
			out := make([]float64, len(vs))
			for t, n := range vs {
				x, err := number(n, fmt.Sprintf("%s[%d]", name, t))
				if err != nil {
					return Instance{}, err
				}
				if x < f.Lo || x > f.Hi {
					return Instance{}, instErr("%q[%d] = %v is outside its range [%v, %v]", name, t, x, f.Lo, f.Hi)
				}
				out[t] = x
			}
			in.Forecasts[r.idx] = out
		default:
			return Instance{}, instErr("%q is an input: a measurement carries states, unit states and forecasts", name)
		}
	}
	if _, err := dec.Token(); err != nil {
		return Instance{}, instErr("%v", syntaxErr(err))
	}
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return Instance{}, instErr("trailing data after the JSON object")
	}
	if version == nil {
		return Instance{}, instErr(`missing "v"`)
	}
	for _, group := range []struct {
		kind  int
		names func(int) string
		n     int
	}{
		{kindState, func(i int) string { return m.States[i].Name }, len(m.States)},
		{kindUnit, func(i int) string { return m.Units[i].Name }, len(m.Units)},
		{kindForecast, func(i int) string { return m.Forecasts[i].Name }, len(m.Forecasts)},
	} {
		for i := range group.n {
			if !seen[group.names(i)] {
				return Instance{}, instErr("missing %q (%s)", group.names(i), kindNames[group.kind])
			}
		}
	}
	return in, nil
}

// number reads one finite JSON number.
func number(raw json.RawMessage, name string) (float64, error) {
	raw = bytes.TrimSpace(raw)
	var n json.Number
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return 0, instErr("%q must be a number", name)
	}
	x, err := n.Float64()
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, instErr("%q is not a finite number", name)
	}
	return x, nil
}

func syntaxErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of JSON input")
	}
	return err
}

// MarshalInstance is the canonical JSON of an instance: "v", then states, units and forecasts by
// name in the model's order.
func (m *Model) MarshalInstance(in *Instance) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"v":1`)
	put := func(name string, v any) {
		k, _ := json.Marshal(name)
		x, err := json.Marshal(v)
		if err != nil {
			x = []byte("null")
		}
		b.WriteByte(',')
		b.Write(k)
		b.WriteByte(':')
		b.Write(x)
	}
	for i, s := range m.States {
		put(s.Name, in.States[i])
	}
	for i, u := range m.Units {
		put(u.Name, in.On[i])
	}
	for i, f := range m.Forecasts {
		put(f.Name, in.Forecasts[i])
	}
	b.WriteByte('}')
	return b.Bytes()
}
