package model

import (
	"encoding/json"
	"strings"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/enum"
)

// A solved plan reads back as itself, shifted plans too, and a tampered one is refused.
func TestDecodePlan(t *testing.T) {
	fam := loadPumpStation(t)
	mm, err := fam.DecodeMeasurement(asModelMeasurement(groundTruthInstances()[0]))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := mm.Problem()
	r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, fam.Admissible(), gbd.Settings{})
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

// FuzzDecodeApplyAndPlan: the model-derived action payloads never panic the decoders, and
// whatever they accept is a move (or plan) the plant accepts: DecodeApply's values re-encode to an
// apply object it accepts again, and an accepted plan's first move passes DecodeApply.
func FuzzDecodeApplyAndPlan(f *testing.F) {
	fam, err := Load(pumpStationFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"q1":0,"q2":45,"q3":0,"p1":0,"p2":1,"p3":0}`))
	f.Add([]byte(fam.SafeAction()))
	mm, err := fam.DecodeMeasurement(asModelMeasurement(groundTruthInstances()[3]))
	if err != nil {
		f.Fatal(err)
	}
	p, _ := mm.Problem()
	r, err := (&gbd.Engine{Master: &enum.Master{}}).Solve(p, fam.Admissible(), gbd.Settings{})
	if err != nil || r.Y == nil {
		f.Fatalf("%v %v", r.Status, err)
	}
	pl, err := fam.PlanFrom(mm, r)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(pl.JSON()))
	f.Fuzz(func(t *testing.T, data []byte) {
		if in, on, err := fam.DecodeApply(data); err == nil {
			if _, _, err := fam.DecodeApply(fam.marshalApply(in, on)); err != nil {
				t.Fatalf("accepted %s, but not its re-encoding: %v", data, err)
			}
		}
		if pl, err := fam.DecodePlan(data); err == nil {
			if _, _, err := fam.DecodeApply(pl.Apply()); err != nil {
				t.Fatalf("accepted plan %s has a first move the plant refuses: %v", data, err)
			}
		}
	})
}
