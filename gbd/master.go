package gbd

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"gbdmpc/internal/enum"
)

// ErrTimeUp is wrapped by errors of a step that was cut short by its time budget.
var ErrTimeUp = errors.New("time budget exhausted")

// MasterStatus says how a master solve ended.
type MasterStatus int

const (
	MasterOptimal     MasterStatus = iota + 1 // proven optimal: Bound == Mu
	MasterStopped                             // time limit with an incumbent: Bound ≤ optimum ≤ Mu
	MasterNoIncumbent                         // time limit before any integer point: only Bound is known
	MasterInfeasible                          // no admissible y satisfies the feasibility cuts
	MasterAboveCutoff                         // every admissible y has μ_B above the cutoff (Cutoff): Bound ≥ it, no Y
)

var masterStatusNames = [...]string{
	MasterOptimal:     "optimal",
	MasterStopped:     "stopped",
	MasterNoIncumbent: "no_incumbent",
	MasterInfeasible:  "infeasible",
	MasterAboveCutoff: "above_cutoff",
}

func (s MasterStatus) String() string { return enum.Name(masterStatusNames[:], s, "MasterStatus") }

// MasterResult is (ȳ, μ̄_B, L̄B) of Algorithm 2. Before the first optimality cut μ_B is unbounded
// below, so Mu and Bound are −Inf and Y is any y satisfying the constraints.
type MasterResult struct {
	Status MasterStatus
	Y      []float64
	Mu     float64 // objective of Y: max_k φ_o^(k)(Y)
	Bound  float64 // certified lower bound on the master optimum
}

// Master is a back-end for the master problem M (paper eq. (6)):
//
//	min μ_B  s.t.  μ_B ≥ φ_o^(k)(y) ∀k∈K_O,  φ_f^(k)(y) ≤ 0 ∀k∈K_F,  K y ≤ b,  y ∈ {0,1}^m.
//
// Every back-end runs the same shared test suite (master_test.go) and must agree with the others.
type Master interface {
	// Reset starts a new master problem for the given pure binary rows and their admissible set.
	Reset(ny int, pure []PureRow, ypb *Admissible) error
	// AddCut adds one cut; the master keeps its own copy.
	AddCut(c *Cut)
	// Solve solves M. limit > 0 stops the search after that long (the time-limited solve of
	// Algorithm 2); start, if not nil, is offered as a starting incumbent.
	Solve(limit time.Duration, start []float64) (MasterResult, error)
	Name() string
}

// Cutoff is a capability a Master may have: SetCutoff(v) tells it that no assignment whose μ_B
// exceeds v can change the solve's outcome. The engine sets v = UBD − ε whenever the incumbent
// improves (+Inf after Reset): a master optimum above it lifts LBD to within ε of UBD and ends the
// solve. What remains of the solve is then to exclude, one evaluation at a time, the assignments
// with μ_B ≤ v, and a master may keep them at hand (the staged master's pool) instead of
// searching for each. Answers stay exact; only how they are found changes. A master that can
// show that every admissible y has μ_B above v, without finding the optimum, may answer
// MasterAboveCutoff with that bound (≥ v): the solve is then certified.
type Cutoff interface {
	SetCutoff(v float64)
}

// Budgeted is a capability a Master may have: a time limit for classical GBD's master steps, far
// below what an exact solve can take. Early in a solve, with a few cuts, a master's lower bound is
// weak and an exact search can take seconds for an assignment that only its cut will correct; a
// step stopped by the budget hands on its incumbent (a new assignment) and raises LBD by its
// bound. A step that finds no incumbent within the budget is solved exactly, and so is one whose
// incumbent was evaluated already (the engine's repeat rule), so the solve still ends certified.
// StepLimit ≤ 0 means exact master steps.
type Budgeted interface {
	StepLimit() time.Duration
}

// Interruptible is a capability a Master may have: the engine hands it Settings.Interrupt (nil
// when there is none) after Reset, and a master whose single solve can take long (a MILP from
// scratch) asks it while it solves and, once it says true, ends that solve at once with what it
// has: MasterStopped, or MasterNoIncumbent with a bound of −Inf. The engine then ends the solve
// as at its deadline.
type Interruptible interface {
	SetInterrupt(func() bool)
}

// FeasTol is the tolerance of the feasibility screen φ_f(ŷ) ≤ FeasTol, shared by every back-end so
// that they agree on which assignments the feasibility cuts exclude.
const FeasTol = 1e-7

// EnumMaster solves the master problem exactly by scanning Y_pb. Each cut updates, for every
// admissible assignment, the running max of the optimality cuts and of the feasibility cuts
// (O(|Y_pb|·nnz) per cut), so a solve is one O(|Y_pb|) scan: the physical limit for small Y_pb.
type EnumMaster struct {
	ypb     *Admissible
	opt     []float64 // max over optimality cuts at each assignment (−Inf before the first)
	viol    []float64 // max over feasibility cuts at each assignment (−Inf before the first)
	hasOpt  bool
	nz      []int
	scratch []float64
	// smask holds each assignment's pattern in every stage of a staged Y_pb (assignment-major),
	// built at the first stage cut.
	smask []uint16
}

// TakesStageTables implements StageTabled: a staged Y_pb's stage cuts are evaluated with one
// lookup per stage.
func (m *EnumMaster) TakesStageTables() bool { return m.ypb != nil && len(m.ypb.Stages) > 1 }

// Name implements Master.
func (m *EnumMaster) Name() string { return "enum" }

// Reset implements Master.
func (m *EnumMaster) Reset(ny int, _ []PureRow, ypb *Admissible) error {
	if ypb == nil || ypb.NY != ny {
		return fmt.Errorf("enum master: admissible set for %d binaries required", ny)
	}
	if ypb.Implicit() {
		return fmt.Errorf("enum master: Y_pb of %d binaries is too large to enumerate; use the cbc or staged master", ny)
	}
	m.ypb = ypb
	n := ypb.Count()
	m.opt = resize(m.opt, n)
	m.viol = resize(m.viol, n)
	for j := range n {
		m.opt[j], m.viol[j] = math.Inf(-1), math.Inf(-1)
	}
	m.hasOpt = false
	m.smask = m.smask[:0]
	return nil
}

// addCutStages is AddCut for a stage cut: φ(y) = c + Σ_s T_s[pattern of y in s], where T_s sums
// the coefficients of the pattern's binaries and adds the stage's excess.
func (m *EnumMaster) addCutStages(c *Cut) {
	st := c.Tables.Stages
	S, ny := len(st), m.ypb.NY
	n := m.ypb.Count()
	if len(m.smask) != n*S {
		m.smask = resize(m.smask, n*S)
		row := make([]float64, ny)
		for j := range n {
			m.ypb.Float(j, row)
			for s, vs := range st {
				m.smask[j*S+s] = uint16(stagePattern(vs, row))
			}
		}
	}
	tabs := make([][]float64, S)
	for s, vs := range st {
		t := slices.Clone(c.Tables.Excess[s])
		for mask := range t {
			for b, i := range vs {
				if mask>>b&1 == 1 {
					t[mask] += c.Coef[i]
				}
			}
		}
		tabs[s] = t
	}
	dst := m.opt
	if c.Kind == FeasibilityCut {
		dst = m.viol
	} else {
		m.hasOpt = true
	}
	for j := range dst {
		v := c.Const
		for s, mask := range m.smask[j*S : (j+1)*S] {
			v += tabs[s][mask]
		}
		if v > dst[j] {
			dst[j] = v
		}
	}
}

func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// StageTabled is a Master that reads a stage cut's tables (Cut.Tables) rather than only its
// affine part; the engine makes stage cuts for such a master over a staged Y_pb.
type StageTabled interface {
	TakesStageTables() bool
}

// tableScanMin is the |Y_pb| from which AddCut evaluates a cut by byte tables over the packed
// assignments (one lookup per 8 binaries) instead of a pass over each assignment's binaries: the
// tables cost 256 sums per byte of y, which only the smallest sets do not repay
// (BenchmarkEnumMasterAddCut: 5× faster on the 12-binary station, 28× on the 24-binary one).
const tableScanMin = 256

// AddCut implements Master.
func (m *EnumMaster) AddCut(c *Cut) {
	if c.Tables != nil && m.TakesStageTables() && slices.EqualFunc(c.Tables.Stages, m.ypb.Stages, slices.Equal[[]int]) {
		m.addCutStages(c)
		return
	}
	if masks := m.ypb.Masks(); masks != nil && len(masks) >= tableScanMin {
		m.addCutTable(c, masks)
		return
	}
	m.addCutPass(c)
}

// addCutPass is AddCut by a pass over each assignment's binaries with a non-zero coefficient.
func (m *EnumMaster) addCutPass(c *Cut) {
	m.nz = m.nz[:0]
	for i, a := range c.Coef {
		if a != 0 {
			m.nz = append(m.nz, i)
		}
	}
	dst := m.opt
	if c.Kind == FeasibilityCut {
		dst = m.viol
	} else {
		m.hasOpt = true
	}
	ny := m.ypb.NY
	for j := range dst {
		row := m.ypb.Assign[j*ny : (j+1)*ny]
		v := c.Const
		for _, i := range m.nz {
			if row[i] != 0 {
				v += c.Coef[i]
			}
		}
		if v > dst[j] {
			dst[j] = v
		}
	}
}

// addCutTable is AddCut over packed assignments: φ(y) = c + Σ_b T_b[byte b of y], where T_b[v] sums
// the coefficients of the bits set in v.
func (m *EnumMaster) addCutTable(c *Cut, masks []uint64) {
	ny := m.ypb.NY
	nb := (ny + 7) / 8
	if cap(m.scratch) < nb*256 {
		m.scratch = make([]float64, nb*256)
	}
	tab := m.scratch[:nb*256]
	for b := range nb {
		t := tab[b*256 : (b+1)*256]
		t[0] = 0
		for v := 1; v < 256; v++ {
			low := v & -v // lowest set bit
			i := 8*b + bits.TrailingZeros(uint(low))
			a := 0.0
			if i < ny {
				a = c.Coef[i]
			}
			t[v] = t[v&^low] + a
		}
	}
	dst := m.opt
	if c.Kind == FeasibilityCut {
		dst = m.viol
	} else {
		m.hasOpt = true
	}
	dst = dst[:len(masks)]
	var t [8]*[256]float64
	for b := range nb {
		t[b] = (*[256]float64)(tab[b*256 : (b+1)*256])
	}
	k := c.Const
	// Unrolled for the byte counts of the reference stations (the loop over bytes costs as much as
	// the lookups); uint8 indices into [256] arrays need no bounds checks.
	switch nb {
	case 1:
		for j, mk := range masks {
			if v := k + t[0][uint8(mk)]; v > dst[j] {
				dst[j] = v
			}
		}
	case 2:
		for j, mk := range masks {
			if v := k + t[0][uint8(mk)] + t[1][uint8(mk>>8)]; v > dst[j] {
				dst[j] = v
			}
		}
	case 3:
		for j, mk := range masks {
			if v := k + t[0][uint8(mk)] + t[1][uint8(mk>>8)] + t[2][uint8(mk>>16)]; v > dst[j] {
				dst[j] = v
			}
		}
	case 4:
		for j, mk := range masks {
			if v := k + t[0][uint8(mk)] + t[1][uint8(mk>>8)] + t[2][uint8(mk>>16)] + t[3][uint8(mk>>24)]; v > dst[j] {
				dst[j] = v
			}
		}
	case 5:
		for j, mk := range masks {
			if v := k + t[0][uint8(mk)] + t[1][uint8(mk>>8)] + t[2][uint8(mk>>16)] + t[3][uint8(mk>>24)] + t[4][uint8(mk>>32)]; v > dst[j] {
				dst[j] = v
			}
		}
	default:
		for j, mk := range masks {
			v := k
			for b := range nb {
				v += t[b][uint8(mk>>(8*b))]
			}
			if v > dst[j] {
				dst[j] = v
			}
		}
	}
}

// Solve implements Master. The scan is exact, so the time limit is never needed and the result is
// always optimal (ties go to the earliest assignment in Y_pb order).
func (m *EnumMaster) Solve(_ time.Duration, _ []float64) (MasterResult, error) {
	best := -1
	for j, v := range m.viol {
		if v > FeasTol {
			continue
		}
		if best < 0 || m.opt[j] < m.opt[best] {
			best = j
		}
	}
	if best < 0 {
		return MasterResult{Status: MasterInfeasible, Mu: math.Inf(1), Bound: math.Inf(1)}, nil
	}
	y := m.ypb.Float(best, make([]float64, m.ypb.NY))
	return MasterResult{Status: MasterOptimal, Y: y, Mu: m.opt[best], Bound: m.opt[best]}, nil
}

// MaxOptimality is μ̂_B = max_k φ_o^(k)(y) over the optimality cuts (−Inf when there are none):
// the master objective at y, for masters and policies outside this package too.
func MaxOptimality(cuts []Cut, y []float64) float64 {
	return maxOpt(cuts, func(c *Cut) bool { return c.Kind == OptimalityCut }, func(c *Cut) float64 { return c.Eval(y) })
}

// maxOpt is the largest value of the optimality cuts among cuts (−Inf when there are none); only
// those are evaluated.
func maxOpt[C any](cuts []C, isOpt func(*C) bool, value func(*C) float64) float64 {
	v := math.Inf(-1)
	for k := range cuts {
		if c := &cuts[k]; isOpt(c) {
			v = math.Max(v, value(c))
		}
	}
	return v
}

// NewExactMaster is the exact master for ypb, the expert of replay's and datagen's labels and the
// default of replay's re-runs: the scan of an enumerated Y_pb, the staged branch and bound over the
// move blocks of an implicit one.
func NewExactMaster(ypb *Admissible) Master {
	if ypb.Implicit() {
		return &StagedMaster{}
	}
	return &EnumMaster{}
}

// MasterFits says why master cannot serve ypb: the enum master scans an enumerated Y_pb and has
// nothing to scan in an implicit one. The controller checks it at start-up and the offline
// commands before their first solve, rather than every solve failing in Master.Reset.
func MasterFits(ypb *Admissible, master Master) error {
	if ypb.Implicit() && master.Name() == "enum" {
		return fmt.Errorf("Y_pb of %d binaries is too large to enumerate: the enum master cannot scan it, use cbc or staged", ypb.NY)
	}
	return nil
}
