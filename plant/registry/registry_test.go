package registry

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gbdmpc/configs"
	"gbdmpc/plant/pumpstation"
)

// TestConfigsKnowTheRegistry: a config loaded with the registry's names refuses a family the
// registry does not know, naming the ones it does.
func TestConfigsKnowTheRegistry(t *testing.T) {
	load := func(family string) error {
		_, err := configs.Load(configs.Source{NoEnv: true, Families: Names(), Overrides: map[string]any{
			"broker.embedded": true,
			"plants":          []map[string]any{{"id": "p", "family": family, "period": "1s"}},
		}})
		return err
	}
	if err := load(pumpstation.Name); err != nil {
		t.Errorf("%s: %v", pumpstation.Name, err)
	}
	if err := load("boiler"); err == nil || !strings.Contains(err.Error(), `family "boiler": unknown family, want one of `+strings.Join(Names(), ", ")) {
		t.Errorf("unknown family: %v", err)
	}
}

// TestEveryFamilyBuilds: each family builds from defaults and from a config, draws instances its
// own decoder accepts, and refuses unknown params; an unknown name is refused with the known ones.
func TestEveryFamilyBuilds(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			fam, err := Default(name)
			if err != nil || fam.Name() != name {
				t.Fatalf("Default: %v, %v", fam, err)
			}
			if _, err := FromConfig(&configs.Plant{Family: name}); err != nil {
				t.Fatalf("FromConfig: %v", err)
			}
			sample, err := SamplerFor(fam)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 5 {
				if _, err := fam.DecodeMeasurement(sample(rng)); err != nil {
					t.Fatalf("a sampled instance is refused: %v", err)
				}
			}
			if _, err := FromConfig(&configs.Plant{Family: name, Params: map[string]any{"no_such_field": 1}}); err == nil {
				t.Error("an unknown params field was accepted")
			}
		})
	}
	if _, err := Default("boiler"); err == nil || !strings.Contains(err.Error(), "pumpstation") {
		t.Errorf("unknown family: %v", err)
	}
}

// A model written inline in the daemon's config builds its family, and an error in it names the
// config file's line.
func TestInlineModel(t *testing.T) {
	c, err := configs.Load(configs.Source{File: "testdata/inline.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	fam, err := FromConfig(&c.Plants[0])
	if err != nil {
		t.Fatal(err)
	}
	if fam.Name() != "model" || fam.Admissible().NY != 2 {
		t.Errorf("family %s with %d binaries", fam.Name(), fam.Admissible().NY)
	}
	m, err := fam.DecodeMeasurement([]byte(`{"v":1,"level":3,"pump":0,"demand":[50,50,50,50,50,50,50,50]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Problem(); err != nil {
		t.Fatal(err)
	}
	c, err = configs.Load(configs.Source{File: "testdata/inline_bad.yaml", NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromConfig(&c.Plants[0])
	if want := "testdata/inline_bad.yaml:25: cost on q: non-convex: power exponent p = 0.5"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}
