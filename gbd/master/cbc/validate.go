package cbc

import (
	"math"
)

// Everything CBC would accept silently but misinterpret (NaN bounds, an
// out-of-range index, an unsorted start array) or abort on (CoinPackedMatrix
// asserts) is rejected here, before any C call.

const maxDim = math.MaxInt32 - 1

func inputErr(call, field string, i int, msg string) *InputError {
	return &InputError{Call: call, Field: field, Index: i, Msg: msg}
}

func validateProblem(p *Problem) error {
	const load = "Cbc_loadProblem"
	if p == nil {
		return inputErr(load, "Problem", -1, "nil")
	}
	n := p.NumCols
	if n < 1 || n > maxDim {
		return inputErr(load, "NumCols", -1, "must be in [1, 2^31-2]")
	}
	for _, f := range []struct {
		name string
		v    []float64
	}{{"ColLB", p.ColLB}, {"ColUB", p.ColUB}, {"Obj", p.Obj}} {
		if len(f.v) != n {
			return inputErr(load, f.name, -1, "length must equal NumCols")
		}
	}
	if p.Integer != nil && len(p.Integer) != n {
		return inputErr("Cbc_setInteger", "Integer", -1, "length must equal NumCols (or nil)")
	}
	if err := checkBounds(load, "ColLB", "ColUB", p.ColLB, p.ColUB); err != nil {
		return err
	}
	for j, c := range p.Obj {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return inputErr(load, "Obj", j, "must be finite")
		}
	}
	if math.IsNaN(p.ObjOffset) || math.IsInf(p.ObjOffset, 0) {
		return inputErr(load, "ObjOffset", -1, "must be finite")
	}

	m := len(p.RowLB)
	if len(p.RowUB) != m {
		return inputErr(load, "RowUB", -1, "length must equal len(RowLB)")
	}
	if m > maxDim {
		return inputErr(load, "RowLB", -1, "too many rows")
	}
	if m == 0 && len(p.RowStart) == 0 {
		if len(p.RowIdx) != 0 || len(p.RowVal) != 0 {
			return inputErr(load, "RowIdx", -1, "entries given but no rows")
		}
		return nil
	}
	if len(p.RowStart) != m+1 {
		return inputErr(load, "RowStart", -1, "length must be number of rows + 1")
	}
	if p.RowStart[0] != 0 {
		return inputErr(load, "RowStart", 0, "must be 0")
	}
	for r := 0; r < m; r++ {
		if p.RowStart[r+1] < p.RowStart[r] {
			return inputErr(load, "RowStart", r+1, "decreasing")
		}
	}
	nnz := int(p.RowStart[m])
	if len(p.RowIdx) != nnz || len(p.RowVal) != nnz {
		return inputErr(load, "RowIdx/RowVal", -1, "length must equal RowStart[rows]")
	}
	if err := checkBounds(load, "RowLB", "RowUB", p.RowLB, p.RowUB); err != nil {
		return err
	}
	// stamp[j] = r+1 once column j has been seen in row r: duplicate entries
	// would make CoinPackedMatrix either sum or reject them depending on the
	// code path.
	stamp := make([]int32, n)
	for r := 0; r < m; r++ {
		for k := p.RowStart[r]; k < p.RowStart[r+1]; k++ {
			j := p.RowIdx[k]
			if j < 0 || int(j) >= n {
				return inputErr(load, "RowIdx", int(k), "column index out of range")
			}
			if stamp[j] == int32(r)+1 {
				return inputErr(load, "RowIdx", int(k), "column repeated within a row")
			}
			stamp[j] = int32(r) + 1
			if v := p.RowVal[k]; math.IsNaN(v) || math.IsInf(v, 0) {
				return inputErr(load, "RowVal", int(k), "must be finite")
			}
		}
	}
	return nil
}

func checkBounds(call, lbName, ubName string, lb, ub []float64) error {
	for i := range lb {
		l, u := lb[i], ub[i]
		switch {
		case math.IsNaN(l) || math.IsInf(l, 1):
			return inputErr(call, lbName, i, "must be finite or -Inf")
		case math.IsNaN(u) || math.IsInf(u, -1):
			return inputErr(call, ubName, i, "must be finite or +Inf")
		case l > u:
			return inputErr(call, lbName, i, "exceeds upper bound")
		}
	}
	return nil
}

func validateOptions(p *Problem, o *Options) error {
	const set = "Cbc_setParameter"
	switch {
	case o.TimeLimit < 0:
		return inputErr(set, "Options.TimeLimit", -1, "negative")
	case o.MaxNodes < 0 || o.MaxNodes > math.MaxInt32:
		return inputErr(set, "Options.MaxNodes", -1, "must be in [0, 2^31-1]")
	case o.Threads < 0 || o.Threads > 99:
		// CBC reads 100+n as "n threads, deterministic"; keep that out of
		// reach of an accidental large value.
		return inputErr(set, "Options.Threads", -1, "must be in [0, 99]")
	case o.LogLevel < 0 || o.LogLevel > 63:
		return inputErr("Cbc_setLogLevel", "Options.LogLevel", -1, "must be in [0, 63]")
	case !(o.AbsGap >= 0) || math.IsInf(o.AbsGap, 0):
		return inputErr(set, "Options.AbsGap", -1, "must be finite and >= 0")
	case !(o.RelGap >= 0) || math.IsInf(o.RelGap, 0):
		return inputErr(set, "Options.RelGap", -1, "must be finite and >= 0")
	case o.Preset < PresetAuto || o.Preset > PresetCBC:
		return inputErr(set, "Options.Preset", -1, "unknown preset")
	}
	for i, prm := range o.Params {
		if msg := checkParam(prm); msg != "" {
			return inputErr(set, "Options.Params", i, msg)
		}
	}
	if o.Start != nil {
		const ms = "Cbc_setMIPStartI"
		if len(o.Start) != p.NumCols {
			return inputErr(ms, "Options.Start", -1, "length must equal NumCols")
		}
		for j, v := range o.Start {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return inputErr(ms, "Options.Start", j, "must be finite")
			}
			if p.Integer == nil || !p.Integer[j] {
				continue
			}
			if math.Abs(v-math.Round(v)) > intTol {
				return inputErr(ms, "Options.Start", j, "integer column has fractional value")
			}
			if v < p.ColLB[j]-intTol || v > p.ColUB[j]+intTol {
				return inputErr(ms, "Options.Start", j, "outside column bounds")
			}
		}
	}
	return nil
}

// cInf maps ±Inf to ±DBL_MAX, the infinity OsiClpSolverInterface reports
// through getInfinity.
func cInf(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}

// toColumnMajor transposes the CSR rows into the compressed sparse column
// form Cbc_loadProblem takes (a counting sort, so row indices come out sorted
// within each column).
func toColumnMajor(p *Problem) *cModel {
	n, m := p.NumCols, len(p.RowLB)
	nnz := len(p.RowIdx)
	cm := &cModel{
		ncols:    n,
		nrows:    m,
		colStart: make([]int32, n+1),
		rowIdx:   make([]int32, nnz),
		val:      make([]float64, nnz),
		colLB:    make([]float64, n),
		colUB:    make([]float64, n),
		obj:      append([]float64(nil), p.Obj...),
		rowLB:    make([]float64, m),
		rowUB:    make([]float64, m),
		isInt:    make([]byte, n),
	}
	for _, j := range p.RowIdx {
		cm.colStart[j+1]++
	}
	for j := 0; j < n; j++ {
		cm.colStart[j+1] += cm.colStart[j]
	}
	next := append([]int32(nil), cm.colStart[:n]...)
	for r := 0; r < m; r++ {
		for k := p.RowStart[r]; k < p.RowStart[r+1]; k++ {
			j := p.RowIdx[k]
			q := next[j]
			next[j]++
			cm.rowIdx[q] = int32(r)
			cm.val[q] = p.RowVal[k]
		}
	}
	for j := 0; j < n; j++ {
		cm.colLB[j], cm.colUB[j] = cInf(p.ColLB[j]), cInf(p.ColUB[j])
		if p.Integer != nil && p.Integer[j] {
			cm.isInt[j] = 1
			cm.nInt++
		}
	}
	for r := 0; r < m; r++ {
		cm.rowLB[r], cm.rowUB[r] = cInf(p.RowLB[r]), cInf(p.RowUB[r])
	}
	return cm
}

// mipStart keeps the integer columns of start: CBC fixes those and solves
// an LP for the rest, and a continuous value we passed would only be
// overwritten.
func mipStart(p *Problem, start []float64) (idx []int32, val []float64) {
	if start == nil || p.Integer == nil {
		return nil, nil
	}
	for j, isInt := range p.Integer {
		if isInt {
			idx = append(idx, int32(j))
			val = append(val, math.Round(start[j]))
		}
	}
	return idx, val
}
