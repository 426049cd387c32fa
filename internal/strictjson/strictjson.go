// Package strictjson decodes one JSON object into a struct the way specs/interfaces.md reads a
// payload: member names are the fixed, case-sensitive field names of the contract.
//
// encoding/json alone reads too much into a payload a plant got wrong. It matches member names to
// fields without regard to case, so {"Level_M":2} sets the level and {"level_m":3,"LEVEL_M":5}
// plans from 5 m; and of a name given twice it keeps the last, so {"level_m":3,"level_m":4} plans
// from 4 m. A control daemon must not guess which reading the plant meant. Unmarshal reads the
// object in one pass and:
//
//   - matches a member to a field only by its exact name (escapes decoded, as JSON defines);
//   - rejects a name given twice, and a name that differs from a field's only by case;
//   - skips any other member (producers may add fields) and rejects anything after the object.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal decodes data, which must be exactly one JSON object, into the struct v points to.
// Fields are matched by their json tag's name (a field without a tag, or tagged "-", takes no
// member). A value of the wrong type is an error naming its member.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("strictjson: want a non-nil pointer to a struct, got %T", v)
	}
	st := rv.Elem()
	fields := fieldsOf(st.Type())
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return syntaxErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("want a JSON object")
	}
	var seen []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxErr(err)
		}
		name := tok.(string) // inside an object, the decoder yields member names as strings
		for _, s := range seen {
			if s == name {
				return fmt.Errorf("member %q appears twice", name)
			}
		}
		seen = append(seen, name)
		i, ok := fields.index[name]
		if !ok {
			if f, near := fields.fold(name); near {
				return fmt.Errorf("unknown member %q: member names are case-sensitive (the field is %q)", name, f)
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return syntaxErr(err)
			}
			continue
		}
		if err := dec.Decode(st.Field(i).Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("%q: a JSON %s where %s belongs", name, te.Value, kindOf(te.Type))
			}
			return syntaxErr(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return syntaxErr(err)
	}
	// More() is false before a stray ']' or '}', so ask for a second value instead.
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// syntaxErr words a decoder error without the package prefix; the end of input is said as such.
func syntaxErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("unexpected end of JSON input")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// kindOf names what a Go type holds in JSON's words.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array of " + kindOf(t.Elem()) + "s"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	}
	return "a " + t.Kind().String()
}

// fieldSet is a struct type's member names: the index of each field by exact name, and the names
// in lower case to tell a near miss.
type fieldSet struct {
	index map[string]int
	lower map[string]string // strings.ToLower(name) → name
}

func (f *fieldSet) fold(name string) (string, bool) {
	n, ok := f.lower[strings.ToLower(name)]
	return n, ok
}

var cache sync.Map // reflect.Type → *fieldSet

func fieldsOf(t reflect.Type) *fieldSet {
	if f, ok := cache.Load(t); ok {
		return f.(*fieldSet)
	}
	f := &fieldSet{index: map[string]int{}, lower: map[string]string{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		f.index[name] = i
		f.lower[strings.ToLower(name)] = name
	}
	cache.Store(t, f)
	return f
}
