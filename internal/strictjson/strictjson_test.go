package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type reading struct {
	V     *int      `json:"v"`
	Level *float64  `json:"level_m"`
	Pumps []float64 `json:"pumps_on"`
	U     float64   `json:"U"`
	Note  string    `json:"-"`
	quiet int       // unexported: takes no member
}

func TestUnmarshal(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		err      string // "" when it decodes
		level    float64
	}{
		{"exact names", `{"v":1,"level_m":3,"pumps_on":[0,1],"U":2}`, "", 3},
		{"unknown members are skipped", `{"seq":7,"ts_ms":1,"site":{"a":[1,{"b":2}]},"level_m":2.5}`, "", 2.5},
		{"escaped name is the same name", `{"level\u005fm":2}`, "", 2},
		{"surrounding space", " \n{\"level_m\":1}\t", "", 1},
		{"name twice", `{"level_m":3,"level_m":4}`, `member "level_m" appears twice`, 0},
		{"unknown name twice", `{"site":1,"site":2}`, `member "site" appears twice`, 0},
		{"escaped repeat", `{"level_m":3,"level\u005fm":4}`, `member "level_m" appears twice`, 0},
		{"case differs", `{"Level_M":2}`, `unknown member "Level_M": member names are case-sensitive (the field is "level_m")`, 0},
		{"case differs beside the exact name", `{"level_m":3,"LEVEL_M":5}`, `unknown member "LEVEL_M"`, 0},
		{"case differs, upper-case field", `{"u":2}`, `the field is "U"`, 0},
		{"wrong type", `{"level_m":"3"}`, `"level_m": a JSON string where a number belongs`, 0},
		{"wrong element type", `{"pumps_on":[0,"x"]}`, `"pumps_on": a JSON string where a number belongs`, 0},
		{"not an object", `[1,2]`, "want a JSON object", 0},
		{"a string", `"level_m"`, "want a JSON object", 0},
		{"empty", ``, "unexpected end of JSON input", 0},
		{"truncated", `{"level_m":3`, "unexpected end of JSON input", 0},
		{"trailing object", `{"level_m":3}{}`, "trailing data after the JSON object", 0},
		{"trailing bracket", `{"level_m":3}]`, "trailing data after the JSON object", 0},
		{"bad syntax", `{"level_m":3,}`, "invalid character", 0},
		{"bad value syntax", `{"level_m":3x}`, "invalid character", 0},
		{"untagged fields take nothing", `{"Note":"x","quiet":1,"level_m":1}`, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r reading
			err := Unmarshal([]byte(tc.in), &r)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				if r.Level == nil || *r.Level != tc.level || r.Note != "" || r.quiet != 0 {
					t.Errorf("decoded %+v, want level %v and nothing else", r, tc.level)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
			if strings.HasPrefix(err.Error(), "json: ") {
				t.Errorf("error %q carries encoding/json's prefix", err)
			}
		})
	}
}

// Where a payload's names are exact and unique, Unmarshal reads what encoding/json reads.
func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`{"v":1,"level_m":3.25,"pumps_on":[0,1,0],"U":1e3,"seq":9}`,
		`{"pumps_on":[],"v":0}`,
		`{"level_m":null,"pumps_on":null}`,
		`{}`,
	} {
		var a, b reading
		if err := Unmarshal([]byte(in), &a); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if err := json.Unmarshal([]byte(in), &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: strict %+v, encoding/json %+v", in, a, b)
		}
	}
}

func TestUnmarshalWantsAStructPointer(t *testing.T) {
	var m map[string]any
	var r reading
	for _, v := range []any{nil, r, &m, (*reading)(nil)} {
		if err := Unmarshal([]byte(`{}`), v); err == nil || !strings.Contains(err.Error(), "pointer to a struct") {
			t.Errorf("%T: error %v", v, err)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"v":1,"level_m":3,"pumps_on":[0,1],"U":2,"x":{"y":[1]}}`))
	f.Add([]byte(`{"level_m":3,"level_m":4}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r reading
		if err := Unmarshal(data, &r); err != nil {
			return
		}
		// What the strict decoder accepts is valid JSON that encoding/json reads the same way,
		// since the names are exact and unique.
		var b reading
		if err := json.Unmarshal(data, &b); err != nil {
			t.Fatalf("strict accepted %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(r, b) {
			t.Fatalf("%q: strict %+v, encoding/json %+v", data, r, b)
		}
	})
}
