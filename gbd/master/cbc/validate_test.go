package cbc

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func validProblem() *Problem {
	var b rowBuilder
	b.add([]int32{0, 1}, []float64{1, 1}, -inf, 1)
	return b.into(&Problem{NumCols: 2, ColLB: []float64{0, 0}, ColUB: []float64{1, 1},
		Obj: []float64{-1, -1}, Integer: []bool{true, true}})
}

func TestValidationErrors(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		edit  func(p *Problem, o *Options)
		call  string
		field string
		index int
	}{
		{"nil problem", nil, "Cbc_loadProblem", "Problem", -1},
		{"no columns", func(p *Problem, o *Options) { p.NumCols = 0 }, "Cbc_loadProblem", "NumCols", -1},
		{"short ColUB", func(p *Problem, o *Options) { p.ColUB = p.ColUB[:1] }, "Cbc_loadProblem", "ColUB", -1},
		{"short Integer", func(p *Problem, o *Options) { p.Integer = p.Integer[:1] }, "Cbc_setInteger", "Integer", -1},
		{"NaN lb", func(p *Problem, o *Options) { p.ColLB[1] = nan }, "Cbc_loadProblem", "ColLB", 1},
		{"+Inf lb", func(p *Problem, o *Options) { p.ColLB[0] = inf }, "Cbc_loadProblem", "ColLB", 0},
		{"-Inf ub", func(p *Problem, o *Options) { p.ColUB[0] = -inf }, "Cbc_loadProblem", "ColUB", 0},
		{"lb > ub", func(p *Problem, o *Options) { p.ColLB[1] = 2 }, "Cbc_loadProblem", "ColLB", 1},
		{"Inf obj", func(p *Problem, o *Options) { p.Obj[0] = inf }, "Cbc_loadProblem", "Obj", 0},
		{"NaN offset", func(p *Problem, o *Options) { p.ObjOffset = nan }, "Cbc_loadProblem", "ObjOffset", -1},
		{"row count mismatch", func(p *Problem, o *Options) { p.RowUB = nil }, "Cbc_loadProblem", "RowUB", -1},
		{"RowStart length", func(p *Problem, o *Options) { p.RowStart = []int32{0} }, "Cbc_loadProblem", "RowStart", -1},
		{"RowStart[0]", func(p *Problem, o *Options) { p.RowStart = []int32{1, 2} }, "Cbc_loadProblem", "RowStart", 0},
		{"RowStart decreasing", func(p *Problem, o *Options) {
			p.RowStart, p.RowLB, p.RowUB = []int32{0, 2, 1}, []float64{0, 0}, []float64{1, 1}
		}, "Cbc_loadProblem", "RowStart", 2},
		{"nnz mismatch", func(p *Problem, o *Options) { p.RowVal = p.RowVal[:1] }, "Cbc_loadProblem", "RowIdx/RowVal", -1},
		{"index out of range", func(p *Problem, o *Options) { p.RowIdx[1] = 2 }, "Cbc_loadProblem", "RowIdx", 1},
		{"negative index", func(p *Problem, o *Options) { p.RowIdx[0] = -1 }, "Cbc_loadProblem", "RowIdx", 0},
		{"duplicate in row", func(p *Problem, o *Options) { p.RowIdx[1] = 0 }, "Cbc_loadProblem", "RowIdx", 1},
		{"NaN coefficient", func(p *Problem, o *Options) { p.RowVal[0] = nan }, "Cbc_loadProblem", "RowVal", 0},
		{"row lb > ub", func(p *Problem, o *Options) { p.RowLB[0] = 2 }, "Cbc_loadProblem", "RowLB", 0},
		{"NaN row ub", func(p *Problem, o *Options) { p.RowUB[0] = nan }, "Cbc_loadProblem", "RowUB", 0},
		{"entries without rows", func(p *Problem, o *Options) { p.RowStart, p.RowLB, p.RowUB = nil, nil, nil }, "Cbc_loadProblem", "RowIdx", -1},
		{"negative time", func(p *Problem, o *Options) { o.TimeLimit = -time.Second }, "Cbc_setParameter", "Options.TimeLimit", -1},
		{"negative nodes", func(p *Problem, o *Options) { o.MaxNodes = -1 }, "Cbc_setParameter", "Options.MaxNodes", -1},
		{"threads", func(p *Problem, o *Options) { o.Threads = 100 }, "Cbc_setParameter", "Options.Threads", -1},
		{"log level", func(p *Problem, o *Options) { o.LogLevel = -1 }, "Cbc_setLogLevel", "Options.LogLevel", -1},
		{"NaN gap", func(p *Problem, o *Options) { o.RelGap = nan }, "Cbc_setParameter", "Options.RelGap", -1},
		{"negative gap", func(p *Problem, o *Options) { o.AbsGap = -1 }, "Cbc_setParameter", "Options.AbsGap", -1},
		{"preset", func(p *Problem, o *Options) { o.Preset = 7 }, "Cbc_setParameter", "Options.Preset", -1},
		{"start length", func(p *Problem, o *Options) { o.Start = []float64{1} }, "Cbc_setMIPStartI", "Options.Start", -1},
		{"start NaN", func(p *Problem, o *Options) { o.Start = []float64{0, nan} }, "Cbc_setMIPStartI", "Options.Start", 1},
		{"start fractional", func(p *Problem, o *Options) { o.Start = []float64{0.5, 0} }, "Cbc_setMIPStartI", "Options.Start", 0},
		{"start out of bounds", func(p *Problem, o *Options) { o.Start = []float64{0, 2} }, "Cbc_setMIPStartI", "Options.Start", 1},
		{"param unknown", func(p *Problem, o *Options) { o.Params = []Param{{"cutz", "off"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param action", func(p *Problem, o *Options) { o.Params = []Param{{"log", "0"}, {"solve", "x"}} }, "Cbc_setParameter", "Options.Params", 1},
		{"param file writer", func(p *Problem, o *Options) { o.Params = []Param{{"cppGenerate", "1"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param time owned by Options", func(p *Problem, o *Options) { o.Params = []Param{{"sec", "1"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param bad keyword", func(p *Problem, o *Options) { o.Params = []Param{{"cuts", "of"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param int as float", func(p *Problem, o *Options) { o.Params = []Param{{"strong", "2.5"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param float NaN", func(p *Problem, o *Options) { o.Params = []Param{{"ratio", "NaN"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param dash", func(p *Problem, o *Options) { o.Params = []Param{{"-cuts", "off"}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param empty value", func(p *Problem, o *Options) { o.Params = []Param{{"cuts", ""}} }, "Cbc_setParameter", "Options.Params", 0},
		{"param too-short abbreviation", func(p *Problem, o *Options) { o.Params = []Param{{"cut", "off"}} }, "Cbc_setParameter", "Options.Params", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p *Problem
			var o Options
			if c.edit != nil {
				p = validProblem()
				c.edit(p, &o)
			}
			r, err := Solve(p, o)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var ie *InputError
			if !errors.As(err, &ie) || ie.Call != c.call || ie.Field != c.field || ie.Index != c.index {
				t.Fatalf("err = %#v, want call %s field %s index %d", err, c.call, c.field, c.index)
			}
			if !strings.Contains(err.Error(), c.call) {
				t.Errorf("message %q does not name %s", err, c.call)
			}
			if r.Status != Failed || r.X != nil {
				t.Errorf("result on error: %+v", r)
			}
		})
	}
}

func TestParamsAccepted(t *testing.T) {
	ok := [][]Param{
		{{"cuts", "off"}, {"cutsOnOff", "ON"}, {"CUTS", "forceon"}},
		{{"heur", "off"}, {"preprocess", "sos"}, {"presolve", "more"}},
		{{"strong", "3"}, {"trust", "-1"}, {"ratio", "1e-3"}, {"allow", "0.5"}},
		{{"maxN", "10"}, {"scaling", "geo"}, {"scal", "automatic"}, {"node", "depth"}},
	}
	for _, set := range ok {
		for _, prm := range set {
			if msg := checkParam(prm); msg != "" {
				t.Errorf("%v rejected: %s", prm, msg)
			}
		}
		if _, err := Solve(validProblem(), Options{Params: set}); err != nil {
			t.Errorf("%v: %v", set, err)
		}
	}
}

// TestColumnMajor checks the CSR → CSC transpose on a matrix with an empty
// row, an empty column and unsorted row entries.
func TestColumnMajor(t *testing.T) {
	var b rowBuilder
	b.add([]int32{2, 0}, []float64{3, 1}, -inf, 1)
	b.add(nil, nil, -inf, inf)
	b.add([]int32{0, 2}, []float64{4, 5}, 0, inf)
	p := b.into(&Problem{NumCols: 4, ColLB: make([]float64, 4), ColUB: []float64{1, 1, inf, 1}, Obj: make([]float64, 4)})
	if err := validateProblem(p); err != nil {
		t.Fatal(err)
	}
	m := toColumnMajor(p)
	wantStart := []int32{0, 2, 2, 4, 4}
	wantIdx := []int32{0, 2, 0, 2}
	wantVal := []float64{1, 4, 3, 5}
	for i := range wantStart {
		if m.colStart[i] != wantStart[i] {
			t.Fatalf("colStart %v, want %v", m.colStart, wantStart)
		}
	}
	for i := range wantIdx {
		if m.rowIdx[i] != wantIdx[i] || m.val[i] != wantVal[i] {
			t.Fatalf("rowIdx %v val %v, want %v %v", m.rowIdx, m.val, wantIdx, wantVal)
		}
	}
	if m.colUB[2] != math.MaxFloat64 || m.rowLB[0] != -math.MaxFloat64 || m.rowUB[1] != math.MaxFloat64 {
		t.Errorf("infinities not mapped to ±DBL_MAX")
	}
}
