package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/mpc"
	"gbdmpc/policy"
	"gbdmpc/telemetry"
)

// Options select the records of a decision log and say which action space they must fit.
type Options struct {
	// Family is the plant family whose Y_pb every master record must match (required).
	Family mpc.Family
	// From and To select records with From ≤ ts < To; a zero bound is open. The window applies to
	// records, so a solve cut by an edge keeps only its masters inside the window.
	From, To time.Time
	// Plants selects plant ids; empty means every plant.
	Plants []string
	// Strict makes a corrupt line an error. By default it is skipped and counted in Stats.Skipped:
	// one damaged line should not cost the rest of a production log.
	Strict bool
	// Workers read segments and label master problems in parallel (0: GOMAXPROCS); the result does
	// not depend on it.
	Workers int
	// Now measures throughput; nil means time.Now. Nothing else reads it.
	Now func() time.Time
}

// Solve is one logged GBD solve, the unit that splits and shadow re-runs never break up.
type Solve struct {
	Set           int       `json:"set"` // index in Data.Solves, and policy.Sample.Set of its masters
	ID            string    `json:"solve_id"`
	Plant         string    `json:"plant"`
	Step          uint64    `json:"step,omitempty"`
	PolicyVersion string    `json:"policy_version,omitempty"`
	Start         time.Time `json:"start"` // earliest selected record
	End           time.Time `json:"end"`   // latest selected record
	Masters       int       `json:"masters"`
	// Instance is the family's instance JSON, from the solve record or else any master record.
	Instance json.RawMessage `json:"-"`
	// Y0 is the first iterate y^0 (Prev of the iteration-0 master), nil when no such record was kept.
	Y0 []float64 `json:"-"`
	// Carried are the cuts the solve started with (carried from an earlier step).
	Carried []gbd.Cut `json:"-"`
	// Logged is the solve record, nil when it is missing (a crash, or outside the window).
	Logged *telemetry.SolveRecord `json:"-"`

	first *telemetry.MasterRecord // the iteration-0 master record (Carried's), nil when none was kept
}

// Stats count what the replay read, kept and rejected, and how fast it went.
type Stats struct {
	Records  int `json:"records"`  // complete records read
	Selected int `json:"selected"` // of those, inside the window and plant selection
	Torn     int `json:"torn"`     // torn tails and cut-short gzipped segments skipped by the reader
	Skipped  int `json:"skipped"`  // corrupt lines skipped (not Strict)

	MasterRecords int `json:"master_records"` // selected master records
	SolveRecords  int `json:"solve_records"`  // selected solve records
	// OtherFamily counts selected records of another plant family, YpbMismatch master records whose
	// Y_pb (binaries, signature or size) is not the family's, Malformed master records that cannot be
	// rebuilt (previous iterate of the wrong length), InfeasibleMasters masters whose feasibility cuts
	// exclude all of Y_pb, so that they have no label. None of them reaches the dataset.
	OtherFamily       int `json:"rejected_other_family"`
	YpbMismatch       int `json:"rejected_ypb_mismatch"`
	Malformed         int `json:"rejected_malformed"`
	InfeasibleMasters int `json:"infeasible_masters"`
	// FirstMismatch describes the first Y_pb mismatch, so the count comes with its reason.
	FirstMismatch string `json:"first_mismatch,omitempty"`
	// TaintedSolves are solves dropped whole because one of their masters had another Y_pb.
	TaintedSolves int `json:"tainted_solves,omitempty"`
	// SoftRecords counts selected records of soft-constrained solves (telemetry.ProblemSoft), left
	// out: the logged instance rebuilds the hard problem, so their cuts cannot be re-run with it,
	// and the agent is trained on the problem it serves at every step.
	SoftRecords int `json:"soft_records,omitempty"`

	Masters int `json:"masters"` // labelled master problems: the dataset's samples
	Solves  int `json:"solves"`
	// LoggedOptimal counts masters whose logged master solve was optimal; LabelAgrees how many of those
	// logged the label the replay computed. They differ only where ties were broken differently (a
	// MILP back-end) or the log is wrong.
	LoggedOptimal int `json:"logged_optimal"`
	LabelAgrees   int `json:"label_agrees"`
	// PolicyVersions counts selected master records by the agent version that was running.
	PolicyVersions map[string]int `json:"policy_versions,omitempty"`

	ReadSeconds      float64 `json:"read_seconds"`
	LabelSeconds     float64 `json:"label_seconds"`
	MastersPerSecond float64 `json:"masters_per_second"` // labelled masters / (read + label) wall time
}

// Data is a replayed log: the labelled dataset, the solves its samples belong to, and the counts.
type Data struct {
	Dataset *policy.Dataset
	Solves  []Solve // in order of Start; Solves[i].Set == i
	Stats   Stats
}

// pending is a master record waiting for its label.
type pending struct {
	rec   *telemetry.MasterRecord
	solve int // index into collector.solves, then Set once solves are ordered
}

type solveKey struct{ plant, id string }

// Read replays the decision-log segments at paths (directories or files, plain or gzipped), rebuilds
// every selected master problem and labels it with its exact optimum over Y_pb.
func Read(ctx context.Context, opt Options, paths ...string) (*Data, error) {
	if opt.Family == nil {
		return nil, errors.New("replay: no plant family")
	}
	ypb := opt.Family.Admissible()
	if ypb == nil || ypb.Empty() {
		return nil, fmt.Errorf("replay: family %q has an empty admissible set", opt.Family.Name())
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	t0 := now()
	files, err := telemetry.SegmentFiles(paths...)
	if err != nil {
		return nil, err
	}
	segs, err := readSegments(ctx, files, opt.Strict, opt.Workers)
	if err != nil {
		return nil, err
	}
	c := &collector{family: opt.Family.Name(), ypb: ypb, index: map[solveKey]int{}, tainted: map[solveKey]bool{},
		filter: telemetry.Filter{From: opt.From, To: opt.To, Plants: opt.Plants}}
	c.st.PolicyVersions = map[string]int{}
	for _, seg := range segs {
		c.st.Torn += seg.torn
		c.st.Skipped += seg.skipped
		for _, rec := range seg.recs {
			c.add(rec)
		}
	}
	t1 := now()
	c.st.ReadSeconds = t1.Sub(t0).Seconds()

	d := c.order()
	hinges := solveHinges(opt.Family, d.Solves)
	for i := range d.Solves {
		if s := &d.Solves[i]; s.first != nil {
			s.Carried = s.first.GBDCuts(true, hinges[i])
		}
	}
	samples, lst := label(ctx, c.masters, ypb, hinges, opt.Workers)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := &c.st
	st.InfeasibleMasters, st.LoggedOptimal, st.LabelAgrees = lst.infeasible, lst.loggedOptimal, lst.agrees
	d.Dataset = &policy.Dataset{Family: opt.Family.Name(), Ypb: ypb, Samples: samples}
	for i := range samples {
		d.Solves[samples[i].Set].Masters++
	}
	st.Masters, st.Solves = len(samples), len(d.Solves)
	st.LabelSeconds = now().Sub(t1).Seconds()
	if s := st.ReadSeconds + st.LabelSeconds; s > 0 {
		st.MastersPerSecond = float64(st.Masters) / s
	}
	if len(st.PolicyVersions) == 0 {
		st.PolicyVersions = nil
	}
	d.Stats = *st
	return d, nil
}

// collector selects records, checks them against the family and groups them by solve.
type collector struct {
	family  string
	ypb     *gbd.Admissible
	filter  telemetry.Filter
	st      Stats
	solves  []*Solve
	index   map[solveKey]int
	masters []pending
	// tainted solves had a master of another action space: their instance belongs to a plant
	// configured differently, so neither their masters nor a re-run of them can be trusted.
	tainted map[solveKey]bool
}

func (c *collector) add(rec *telemetry.Record) {
	st := &c.st
	st.Records++
	if !c.filter.Match(rec) {
		return
	}
	st.Selected++
	if rec.Family != c.family {
		st.OtherFamily++
		return
	}
	if rec.Problem == telemetry.ProblemSoft {
		st.SoftRecords++
		return
	}
	switch rec.Type {
	case telemetry.TypeSolve:
		st.SolveRecords++
		s := c.solves[c.solveOf(rec)]
		s.Logged = rec.Solve
		if len(rec.Solve.Instance) > 0 {
			s.Instance = rec.Solve.Instance
		}
	case telemetry.TypeMaster:
		st.MasterRecords++
		m := rec.Master
		if msg := ypbMismatch(m, c.ypb); msg != "" {
			st.YpbMismatch++
			c.tainted[keyOf(rec)] = true
			if st.FirstMismatch == "" {
				st.FirstMismatch = msg
			}
			return
		}
		if len(m.Prev) != c.ypb.NY {
			st.Malformed++
			return
		}
		st.PolicyVersions[rec.PolicyVersion]++
		i := c.solveOf(rec)
		s := c.solves[i]
		if s.Instance == nil && len(m.Instance) > 0 {
			s.Instance = m.Instance
		}
		if m.Iter == 0 {
			s.Y0 = m.Prev
			s.first = m
		}
		c.masters = append(c.masters, pending{rec: m, solve: i})
	}
}

// solveOf returns the index of rec's solve, creating it, and widens its time span to rec.
func (c *collector) solveOf(rec *telemetry.Record) int {
	k := keyOf(rec)
	ts := time.UnixMilli(rec.TSms).UTC()
	i, ok := c.index[k]
	if !ok {
		i = len(c.solves)
		c.index[k] = i
		c.solves = append(c.solves, &Solve{ID: k.id, Plant: rec.Plant, Step: rec.Step, Start: ts, End: ts})
	}
	s := c.solves[i]
	if ts.Before(s.Start) {
		s.Start = ts
	}
	if ts.After(s.End) {
		s.End = ts
	}
	if s.PolicyVersion == "" {
		s.PolicyVersion = rec.PolicyVersion
	}
	return i
}

// order drops tainted solves, orders the rest by start time and renumbers the masters' solves to
// Set indices, keeping log order within a solve. Chronological Set indices are what the hold-out
// split relies on; log order breaks ties, so the result is deterministic.
func (c *collector) order() *Data {
	var order []int
	for i, s := range c.solves {
		if c.tainted[solveKey{s.Plant, s.ID}] {
			c.st.TaintedSolves++
			continue
		}
		order = append(order, i)
	}
	sort.SliceStable(order, func(a, b int) bool { return c.solves[order[a]].Start.Before(c.solves[order[b]].Start) })
	rank := make([]int, len(c.solves))
	for i := range rank {
		rank[i] = -1
	}
	d := &Data{Solves: make([]Solve, len(order))}
	for set, i := range order {
		rank[i] = set
		d.Solves[set] = *c.solves[i]
		d.Solves[set].Set = set
	}
	kept := c.masters[:0]
	for _, m := range c.masters {
		if rank[m.solve] >= 0 {
			m.solve = rank[m.solve]
			kept = append(kept, m)
		}
	}
	slices.SortStableFunc(kept, func(a, b pending) int { return a.solve - b.solve })
	c.masters = kept
	return d
}

// solveHinges are each solve's hinges (gbd.FindHinges of the problem its instance rebuilds; nil
// without an instance or hinges), which the cuts logged with hinges carry again: the logged cut
// is its affine part, and the master the engine solved added the hinges' exact cost to it.
func solveHinges(fam mpc.Family, solves []Solve) []*gbd.Hinges {
	out := make([]*gbd.Hinges, len(solves))
	stages := fam.Admissible().Stages
	for i := range solves {
		if len(solves[i].Instance) == 0 {
			continue
		}
		m, err := fam.DecodeMeasurement(solves[i].Instance)
		if err != nil {
			continue
		}
		if p, err := m.Problem(); err == nil && p.Validate() == nil {
			out[i] = gbd.FindHinges(p, stages)
		}
	}
	return out
}

// ypbMismatch says why a master record's action space is not ypb ("" when it is). The signature
// alone would do; the counts make the message useful to someone who changed a plant's configuration.
func ypbMismatch(m *telemetry.MasterRecord, ypb *gbd.Admissible) string {
	if m.NY == ypb.NY && m.YpbSignature == ypb.Signature && m.YpbCount == ypb.Count() {
		return ""
	}
	return fmt.Sprintf("master record has %d binaries and %d admissible assignments (signature %.12s…); the family has %d and %d (%.12s…)",
		m.NY, m.YpbCount, m.YpbSignature, ypb.NY, ypb.Count(), ypb.Signature)
}

// keyOf groups a record with its solve. Without a solve id the measurement sequence number is what
// ties a step's records together.
func keyOf(rec *telemetry.Record) solveKey {
	id := rec.SolveID
	if id == "" {
		id = fmt.Sprintf("step-%d", rec.Step)
	}
	return solveKey{rec.Plant, id}
}
