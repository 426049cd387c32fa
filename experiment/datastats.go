package experiment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gbdmpc/gbd"
	"gbdmpc/policy"
)

// DataStats describes an expert dataset the way the paper's protocol can be checked against it:
// how many master problems each parameter set gave, how many have feasibility cuts, how often the
// expert's label is one of several optimal solutions (a tie the label breaks arbitrarily), and
// whether the same master problem occurs more than once or on both sides of a train/test split.
type DataStats struct {
	Samples, Sets          int
	PerSetMean             float64
	PerSetMin, PerSetMax   int
	WithFeasCuts           int // samples with at least one feasibility cut
	NoOptimalityCut        int // samples whose master has no optimality cut: μ_B unbounded, every screened y optimal
	Tied                   int // samples with more than one optimal assignment (NoOptimalityCut included)
	TiedWithOptimalityCuts int // of those, masters that have optimality cuts
	// LabelFirstOptimal counts labels that are the first optimal assignment in Y_pb order (the enum
	// master's tie rule): all of them for data from Datagen.
	LabelFirstOptimal int
	LabelNotOptimal   int // labels that are not optimal under policy.TieTol (should be 0)
	// ClassShare is the share of each label index, in Y_pb order; Majority the share of the most
	// frequent one (the exact match of a constant policy).
	ClassShare []float64
	Majority   float64
	// Duplicates counts samples whose master problem (previous iterate and cuts, as a set, to 6
	// significant digits) occurred earlier in the dataset; DuplicateConflicts those whose earlier twin
	// has another label.
	Duplicates, DuplicateConflicts int
	// Per binary: OnShare is how often the label sets each binary, MarginalBCE the mean binary
	// cross-entropy (nats a binary) of the constant predictor σ⁻¹(OnShare), the stage-1 loss a
	// network that learned nothing about the master beyond those shares reaches. LabelIsPrev counts
	// labels equal to the previous iterate, MeanFlips is the mean number of binaries they differ in.
	OnShare     []float64
	MarginalBCE float64
	LabelIsPrev int
	MeanFlips   float64
	// Implicit is set for a Y_pb too large to enumerate: the statistics that scan Y_pb (ties, labels
	// against the optimal set, class shares) are not computed, and a label is its assignment.
	Implicit bool
}

// DescribeData computes DataStats.
func DescribeData(ds *policy.Dataset) DataStats {
	st := DataStats{Samples: len(ds.Samples), Implicit: ds.Ypb.Implicit()}
	perSet := map[int]int{}
	seen := map[string]string{}
	var y []float64
	var opt []bool
	if !st.Implicit {
		st.ClassShare = make([]float64, ds.Ypb.Count())
		y, opt = make([]float64, ds.Ypb.NY), make([]bool, ds.Ypb.Count())
	}
	st.OnShare = make([]float64, ds.Ypb.NY)
	flips := 0
	for i := range ds.Samples {
		s := &ds.Samples[i]
		perSet[s.Set]++
		same := true
		for j, b := range s.Bits(ds.Ypb) {
			st.OnShare[j] += float64(b)
			if j < len(s.Prev) && float64(b) != s.Prev[j] {
				flips++
				same = false
			}
		}
		if same {
			st.LabelIsPrev++
		}
		label := strconv.Itoa(s.Label)
		if st.Implicit {
			label = fmt.Sprint(s.Y)
		} else {
			st.ClassShare[s.Label]++
		}
		hasOpt, hasFeas := false, false
		for _, c := range s.Cuts {
			hasOpt = hasOpt || c.Kind == gbd.OptimalityCut
			hasFeas = hasFeas || c.Kind == gbd.FeasibilityCut
		}
		if hasFeas {
			st.WithFeasCuts++
		}
		if !hasOpt {
			st.NoOptimalityCut++
		}
		if !st.Implicit {
			n := policy.OptimalSet(s.Cuts, ds.Ypb, y, opt)
			if n > 1 {
				st.Tied++
				if hasOpt {
					st.TiedWithOptimalityCuts++
				}
			}
			if !opt[s.Label] {
				st.LabelNotOptimal++
			} else if slices.Index(opt, true) == s.Label {
				st.LabelFirstOptimal++
			}
		}
		key := masterKey(s)
		if l, ok := seen[key]; ok {
			st.Duplicates++
			if l != label {
				st.DuplicateConflicts++
			}
		} else {
			seen[key] = label
		}
	}
	st.Sets = len(perSet)
	st.PerSetMin = math.MaxInt
	for _, n := range perSet {
		st.PerSetMin, st.PerSetMax = min(st.PerSetMin, n), max(st.PerSetMax, n)
	}
	if st.Sets > 0 {
		st.PerSetMean = float64(st.Samples) / float64(st.Sets)
	} else {
		st.PerSetMin = 0
	}
	if st.Samples > 0 {
		st.MeanFlips = float64(flips) / float64(st.Samples)
		for j, v := range st.OnShare {
			p := v / float64(st.Samples)
			st.OnShare[j] = p
			if p > 0 && p < 1 {
				st.MarginalBCE -= (p*math.Log(p) + (1-p)*math.Log(1-p)) / float64(len(st.OnShare))
			}
		}
	}
	for j := range st.ClassShare {
		if st.Samples > 0 {
			st.ClassShare[j] /= float64(st.Samples)
		}
		st.Majority = max(st.Majority, st.ClassShare[j])
	}
	return st
}

// CrossDuplicates counts the samples of test whose master problem (as in DataStats.Duplicates)
// also occurs in train: a split by parameter set should leave none.
func CrossDuplicates(train, test *policy.Dataset) int {
	seen := map[string]bool{}
	for i := range train.Samples {
		seen[masterKey(&train.Samples[i])] = true
	}
	n := 0
	for i := range test.Samples {
		if seen[masterKey(&test.Samples[i])] {
			n++
		}
	}
	return n
}

// masterKey identifies a master problem up to the order of its cuts and solver noise: the previous
// iterate, then every cut (kind, coefficients, constant to 6 significant digits), sorted.
func masterKey(s *policy.Sample) string {
	num := func(b *strings.Builder, v float64) {
		b.WriteString(strconv.FormatFloat(v, 'g', 6, 64))
		b.WriteByte(',')
	}
	cuts := make([]string, len(s.Cuts))
	var b strings.Builder
	for k, c := range s.Cuts {
		b.Reset()
		b.WriteString(c.Kind.String()[:1])
		for _, a := range c.Coef {
			num(&b, a)
		}
		num(&b, c.Const)
		cuts[k] = b.String()
	}
	slices.Sort(cuts)
	b.Reset()
	for _, v := range s.Prev {
		num(&b, v)
	}
	b.WriteByte('|')
	b.WriteString(strings.Join(cuts, ";"))
	return b.String()
}

// String renders the statistics for a terminal.
func (st DataStats) String() string {
	pct := func(n int) string {
		return fmt.Sprintf("%d (%.2f%%)", n, 100*float64(n)/math.Max(1, float64(st.Samples)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "samples %d from %d sets: %.1f a set (min %d, max %d)\n", st.Samples, st.Sets, st.PerSetMean, st.PerSetMin, st.PerSetMax)
	fmt.Fprintf(&b, "with feasibility cuts       %s\n", pct(st.WithFeasCuts))
	fmt.Fprintf(&b, "no optimality cut           %s (every screened assignment optimal)\n", pct(st.NoOptimalityCut))
	if !st.Implicit {
		fmt.Fprintf(&b, "tied labels                 %s, %d of them with optimality cuts\n", pct(st.Tied), st.TiedWithOptimalityCuts)
		fmt.Fprintf(&b, "label = first optimal       %s; label not optimal %d\n", pct(st.LabelFirstOptimal), st.LabelNotOptimal)
	}
	fmt.Fprintf(&b, "duplicate masters           %s, %d with another label\n", pct(st.Duplicates), st.DuplicateConflicts)
	fmt.Fprintf(&b, "label = previous iterate    %s; %.2f binaries differ on average\n", pct(st.LabelIsPrev), st.MeanFlips)
	fmt.Fprintf(&b, "constant per-binary shares  binary cross-entropy %.4f a binary (what stage 1 must beat)\n", st.MarginalBCE)
	if st.Implicit {
		b.WriteString("Y_pb too large to enumerate: ties, labels against the optimal set and label shares not computed\n")
		return b.String()
	}
	fmt.Fprintf(&b, "majority label              %.2f%%; shares", 100*st.Majority)
	for _, v := range st.ClassShare {
		fmt.Fprintf(&b, " %.1f", 100*v)
	}
	b.WriteString("\n")
	return b.String()
}
