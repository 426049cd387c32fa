package model

import (
	"encoding/json"
	"strings"
	"testing"

	"gbdmpc/gbd"
)

// A solved plan reads back as itself, shifted plans too, and a tampered one is refused.
func TestDecodePlan(t *testing.T) {
	fam := loadPumpStation(t)
	mm, err := fam.DecodeMeasurement(asModelMeasurement(groundTruthInstances()[0]))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := mm.Problem()
	r, err := (&gbd.Engine{}).Solve(p, fam.Admissible(), gbd.Settings{})
	if err != nil || r.Y == nil {
		t.Fatalf("%v %v", r.Status, err)
	}
	pl, err := fam.PlanFrom(mm, r)
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := pl.Shift()
	for _, want := range []json.RawMessage{pl.JSON(), sh.JSON()} {
		back, err := fam.DecodePlan(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := back.JSON(); string(got) != string(want) {
			t.Errorf("read back\n%s\nwrote\n%s", got, want)
		}
		if string(back.Apply()) == "" {
			t.Error("no first move")
		}
	}
	js := string(pl.JSON())
	for name, bad := range map[string]string{
		"dt":        strings.Replace(js, `"dt":0.25`, `"dt":0.5`, 1),
		"y":         strings.Replace(js, `"y":[`, `"y":[2,`, 1),
		"null plan": `null`,
		"unit":      strings.Replace(js, `"p1":[0,`, `"p1":[2,`, 1),
		"state":     strings.Replace(js, `"level_m":[`, `"level_m":[7,`, 1),
	} {
		if _, err := fam.DecodePlan(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: a tampered plan was read back", name)
		}
	}
}
