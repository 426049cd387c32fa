package gbd_test

import (
	"slices"
	"testing"

	"gbdmpc/gbd"
	"gbdmpc/gbd/gbdtest"
)

// A stage model knows the arguments it was built from, so a master reset for the next step keeps
// it; changing any row, stage or the binaries' count makes it a different model. The pump rows'
// minimum up-time rule reaches two stages back, so only in the first two stages do the allowed
// successors not depend on the pattern two stages back: one class of rows per last pattern.
func TestStageModelDescribes(t *testing.T) {
	rows, stages := gbdtest.PumpRows(3, 4)
	sm, err := gbd.NewStageModel(12, stages, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !sm.Describes(12, stages, rows) {
		t.Fatal("a model does not describe its own arguments")
	}
	rows[0].Coef[0] = 2 // the caller's rows are copied: the model stays what it was
	if sm.Describes(12, stages, rows) {
		t.Fatal("a changed coefficient still described")
	}
	rows[0].Coef[0] = 1
	if sm.Describes(13, stages, rows) || sm.Describes(12, stages[:3], rows) || sm.Describes(12, stages, rows[1:]) {
		t.Fatal("other binaries, stages or rows described")
	}
	var none *gbd.StageModel
	if none.Describes(12, stages, rows) {
		t.Fatal("a nil model describes something")
	}
	// local: the stage's rows are alike for every pattern two stages back.
	local := func(sm *gbd.StageModel, s int) bool {
		_, rep := sm.Classes(s)
		return len(rep) == sm.N(s-1)
	}
	var byStage []bool
	for s := range sm.Stages() {
		byStage = append(byStage, local(sm, s))
	}
	if want := []bool{true, true, false, false}; !slices.Equal(byStage, want) {
		t.Fatalf("local by stage %v, want %v", byStage, want)
	}
	// Without the up-time rule every stage's triples depend on its own pattern only.
	sm2, err := gbd.NewStageModel(12, stages, rows[:4])
	if err != nil {
		t.Fatal(err)
	}
	for s := range sm2.Stages() {
		if !local(sm2, s) {
			t.Fatalf("stage %d not local with the block rows only", s)
		}
	}
}

// Classes: two rows of a stage's table share a class exactly when their last pattern and their
// successors are the same, and each class's representative is one of its rows.
func TestStageModelClasses(t *testing.T) {
	rows, stages := gbdtest.PumpRows(3, 4)
	sm, err := gbd.NewStageModel(12, stages, rows)
	if err != nil {
		t.Fatal(err)
	}
	fewer := false
	for s := range sm.Stages() {
		nb := sm.N(s - 1)
		class, rep := sm.Classes(s)
		if len(class) != sm.N(s-2)*nb {
			t.Fatalf("stage %d: %d rows classed, want %d", s, len(class), sm.N(s-2)*nb)
		}
		for k, r := range rep {
			if class[r] != int32(k) {
				t.Fatalf("stage %d: representative %d of class %d is in class %d", s, r, k, class[r])
			}
		}
		for i := range class {
			for j := range class {
				same := i%nb == j%nb && slices.Equal(sm.Successors(s, i), sm.Successors(s, j))
				if same != (class[i] == class[j]) {
					t.Fatalf("stage %d: rows %d and %d same=%v but classes %d, %d", s, i, j, same, class[i], class[j])
				}
			}
		}
		fewer = fewer || len(rep) < len(class)
	}
	if !fewer {
		t.Error("the up-time rule's stages have as many classes as rows")
	}
}
