package policy

import (
	"strings"
	"testing"
)

// TestPresets: every preset is a valid training configuration, the default exists, "paper" is the
// paper's network (the zero Arch, Adam), and an unknown name is refused with the known ones listed.
func TestPresets(t *testing.T) {
	if _, err := PresetByName(DefaultPreset); err != nil {
		t.Fatal(err)
	}
	for name, p := range Presets {
		cfg := TrainConfig{}
		p.Apply(&cfg)
		full := cfg.withDefaults()
		if err := full.validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
		if cfg.Stage1.WeightDecay != p.WeightDecay || cfg.Stage2.WeightDecay != p.WeightDecay {
			t.Errorf("preset %s: weight decay %v/%v, want %v", name, cfg.Stage1.WeightDecay, cfg.Stage2.WeightDecay, p.WeightDecay)
		}
	}
	if p := Presets["paper"]; p.WeightDecay != 0 || p.Arch.VarIndex || p.Arch.CutCoefs || p.Arch.Kernel != 0 || p.Arch.Pool != "" || p.Arch.CutNorm != "" {
		t.Errorf("paper preset %+v is not the paper's network", p)
	}
	_, err := PresetByName("bestest")
	if err == nil || !strings.Contains(err.Error(), "paper-features") {
		t.Errorf("unknown preset: %v", err)
	}
}
