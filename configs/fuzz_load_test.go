package configs

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad writes arbitrary bytes as a YAML file and loads it. Properties: Load never panics or
// hangs; a rejection is a non-nil error with a message; an accepted configuration validates again
// (Load's result is stable) and has at least one plant, each with an id, 0 < deadline < period,
// 0 ≤ deadline_reserve < deadline and a positive max_age.
func FuzzLoad(f *testing.F) {
	for _, glob := range []string{"testdata/good/*.yaml", "testdata/bad/*.yaml", "*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("plants: [{id: a, family: synthesis, period: 1s, deadline: 2s}]"))
	f.Add([]byte("a: &a [*a, *a]"))
	f.Add([]byte("\t- :"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 8<<10 {
			return
		}
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(Source{File: path, NoEnv: true})
		if err != nil {
			if c != nil {
				t.Fatal("Load returned a configuration with its error")
			}
			if err.Error() == "" {
				t.Fatal("rejection without a message")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted configuration does not validate again: %v", err)
		}
		if len(c.Plants) == 0 {
			t.Fatal("accepted a configuration without plants")
		}
		for _, p := range c.Plants {
			if p.ID == "" || p.Period <= 0 || p.Deadline <= 0 || p.Deadline >= p.Period || p.MaxAge <= 0 ||
				p.DeadlineReserve < 0 || p.DeadlineReserve >= p.Deadline {
				t.Fatalf("accepted plant %+v", p)
			}
		}
	})
}
