package registry

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gbdmpc/configs"
)

// TestConfigsNameTheRegistry: the family names a config may use are exactly the registry's.
func TestConfigsNameTheRegistry(t *testing.T) {
	want := slices.Sorted(slices.Values(configs.Families))
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("registry %v, configs %v", got, want)
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
