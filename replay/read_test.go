package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gbdmpc/gbd"
	"gbdmpc/gbd/agent"
	"gbdmpc/internal/fakeclock"
	"gbdmpc/mpc"
	"gbdmpc/plant/pumpstation"
	"gbdmpc/telemetry"
)

func read(t testing.TB, opt Options, paths ...string) *Data {
	t.Helper()
	if opt.Family == nil {
		opt.Family = synthesisFamily()
	}
	d, err := Read(context.Background(), opt, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func labelsOf(d *Data) []int {
	out := make([]int, len(d.Dataset.Samples))
	for i, s := range d.Dataset.Samples {
		out[i] = s.Label
	}
	return out
}

func countFeas(d *Data) int {
	n := 0
	for _, s := range d.Dataset.Samples {
		for _, c := range s.Cuts {
			if c.Kind == gbd.FeasibilityCut {
				n++
				break
			}
		}
	}
	return n
}

// TestLabelsEqualLoggedMasters rebuilds every logged master problem and checks that the exact label
// is the optimum the enum master logged when the solve ran, feasibility cuts included.
func TestLabelsEqualLoggedMasters(t *testing.T) {
	dir := t.TempDir()
	logged, _ := writeLog(t, dir, telemetry.LogOptions{},
		logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(1, 12, false), starts: 3})
	for _, workers := range []int{1, 4} {
		d := read(t, Options{Workers: workers}, dir)
		if !slices.Equal(labelsOf(d), logged[0]) {
			t.Fatalf("workers %d: replayed labels %v\nlogged %v", workers, labelsOf(d), logged[0])
		}
		st := d.Stats
		if st.LoggedOptimal != st.Masters || st.LabelAgrees != st.Masters {
			t.Errorf("logged optimal %d, agrees %d, masters %d", st.LoggedOptimal, st.LabelAgrees, st.Masters)
		}
		if countFeas(d) == 0 {
			t.Error("no replayed master has a feasibility cut; the instances should include infeasible y")
		}
		if st.InfeasibleMasters == 0 {
			t.Error("no infeasible master; the sampled sets should include an infeasible MINLP")
		}
		if st.Solves != 36 || st.SolveRecords != 36 {
			t.Errorf("solves %d, solve records %d, want 36", st.Solves, st.SolveRecords)
		}
		if err := d.Dataset.Validate(); err != nil {
			t.Fatal(err)
		}
		// Sets are solves in time order: non-decreasing along the dataset.
		for i := 1; i < len(d.Dataset.Samples); i++ {
			if d.Dataset.Samples[i].Set < d.Dataset.Samples[i-1].Set {
				t.Fatalf("sample %d has set %d after set %d", i, d.Dataset.Samples[i].Set, d.Dataset.Samples[i-1].Set)
			}
		}
		for i, s := range d.Solves {
			if s.Set != i || s.Instance == nil || s.Logged == nil || (s.Masters > 0 && s.Y0 == nil) {
				t.Fatalf("solve %d incomplete: %+v", i, s)
			}
		}
	}
}

// TestLabelsUnderAnAgent logs agent-based GBD (the oracle and a random policy): the logged iterates
// are the agent's, but the logged master solutions are still the enum master's, and so are the labels.
func TestLabelsUnderAnAgent(t *testing.T) {
	for _, name := range []string{"oracle", "random"} {
		pol, err := agent.NewBuiltin(name, 3)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		logged, _ := writeLog(t, dir, telemetry.LogOptions{}, logSpec{plant: "s1", family: synthesisFamily(),
			instances: synthesisInstances(2, 6, true), starts: 2, policy: pol, version: "builtin:" + name})
		d := read(t, Options{}, dir)
		if !slices.Equal(labelsOf(d), logged[0]) {
			t.Errorf("%s: replayed labels %v, logged %v", name, labelsOf(d), logged[0])
		}
		if d.Stats.PolicyVersions["builtin:"+name] != d.Stats.MasterRecords {
			t.Errorf("%s: policy versions %v", name, d.Stats.PolicyVersions)
		}
	}
}

// TestTornTailAndCompressedSegments rotates and gzips segments, then cuts a few bytes off the active
// segment: every complete record is still read, and the torn one is counted.
func TestTornTailAndCompressedSegments(t *testing.T) {
	dir := t.TempDir()
	logged, written := writeLog(t, dir, telemetry.LogOptions{MaxSegmentBytes: 8 << 10, Compress: true},
		logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(3, 8, true), starts: 2})
	gz, _ := filepath.Glob(filepath.Join(dir, "*.jsonl.gz"))
	plain, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(gz) < 2 || len(plain) != 1 {
		t.Fatalf("want rotated gzipped segments and one active one, have %v and %v", gz, plain)
	}
	fi, err := os.Stat(plain[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(plain[0], fi.Size()-5); err != nil {
		t.Fatal(err)
	}
	// The last record of the log is a solve record: its loss costs no master problem.
	d := read(t, Options{}, dir)
	st := d.Stats
	if st.Torn != 1 || st.Records != int(written)-1 || st.Skipped != 0 {
		t.Fatalf("torn %d, records %d of %d written, skipped %d", st.Torn, st.Records, written, st.Skipped)
	}
	if !slices.Equal(labelsOf(d), logged[0]) {
		t.Fatalf("labels differ after truncation")
	}
	if last := d.Solves[len(d.Solves)-1]; last.Logged != nil || last.Instance == nil {
		t.Errorf("the last solve lost its solve record but should keep its masters' instance: %+v", last)
	}
	// Files given one by one read the same.
	files := append(gz, plain...)
	slices.Sort(files)
	if d2 := read(t, Options{}, files...); d2.Stats.Masters != st.Masters || d2.Stats.Torn != 1 {
		t.Errorf("reading files: %+v", d2.Stats)
	}
	// What a crash during compression or a repair leaves beside the segments is not read: the
	// plain source of a finished .gz, a .gz being written, a torn copy.
	first := strings.TrimSuffix(gz[0], ".gz")
	for _, junk := range []string{first, gz[1] + ".tmp", plain[0] + ".torn-1700000000000"} {
		if err := os.WriteFile(junk, []byte("{garbage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if d3 := read(t, Options{Strict: true}, dir); !slices.Equal(labelsOf(d3), logged[0]) || d3.Stats.Records != st.Records {
		t.Errorf("leftovers changed the replay: %+v", d3.Stats)
	}
}

// TestCorruptLineSkippedUnlessStrict puts garbage in the middle of a segment.
func TestCorruptLineSkippedUnlessStrict(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, telemetry.LogOptions{}, logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(4, 3, true)})
	segs, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = slices.Insert(lines, 2, "{not json\n")
	if err := os.WriteFile(segs[0], []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := read(t, Options{}, dir); d.Stats.Skipped != 1 {
		t.Errorf("skipped %d, want 1", d.Stats.Skipped)
	}
	if _, err := Read(context.Background(), Options{Family: synthesisFamily(), Strict: true}, dir); err == nil {
		t.Error("strict read of a corrupt line succeeded")
	}
}

// forged writes copies of a log's records with one field changed, as a log shared by differently
// configured plants would hold.
type forgeSink struct {
	l      *telemetry.DecisionLog
	modify func(*telemetry.Record)
}

func (f forgeSink) Write(r *telemetry.Record) bool {
	f.modify(r)
	return f.l.Write(r)
}

// goodLog opens a log in a new directory and writes n synthesis solves of plant into it; it
// returns what the test then forges more records with, and the labels logged.
func goodLog(t *testing.T, plant string, n int) (string, *fakeclock.Clock, *telemetry.DecisionLog, mpc.Family, []int) {
	dir := t.TempDir()
	clock := newFakeClock()
	l := openLog(t, dir, clock, telemetry.LogOptions{})
	fam := synthesisFamily()
	good := runInto(t, l, clock, logSpec{plant: plant, family: fam, instances: synthesisInstances(5, n, true)})
	return dir, clock, l, fam, good
}

// TestRejectsOtherFamilyAndYpb mixes records of another family and of another Y_pb into a log: they
// are counted, not labelled, and nothing crashes.
func TestRejectsOtherFamilyAndYpb(t *testing.T) {
	dir, clock, l, fam, good := goodLog(t, "good", 4)
	runInto(t, forgeSink{l, func(r *telemetry.Record) { r.Family = "pumpstation" }}, clock,
		logSpec{plant: "pump", family: fam, instances: synthesisInstances(6, 2, true)})
	var forgedMasters int
	runInto(t, forgeSink{l, func(r *telemetry.Record) {
		if r.Master != nil {
			forgedMasters++
			r.Master.YpbSignature = "0123456789abcdef"
			r.Master.YpbCount = 11
		}
	}}, clock, logSpec{plant: "reconfigured", family: fam, instances: synthesisInstances(7, 2, true)})
	closeLog(t, l)

	d := read(t, Options{}, dir)
	st := d.Stats
	if !slices.Equal(labelsOf(d), good) {
		t.Errorf("labels %v, want the good plant's %v", labelsOf(d), good)
	}
	if st.OtherFamily == 0 || st.YpbMismatch != forgedMasters || st.TaintedSolves != 2 {
		t.Errorf("other family %d, Y_pb mismatch %d (want %d), tainted solves %d (want 2)", st.OtherFamily, st.YpbMismatch, forgedMasters, st.TaintedSolves)
	}
	if !strings.Contains(st.FirstMismatch, "11 admissible") || !strings.Contains(st.FirstMismatch, "12") {
		t.Errorf("mismatch message %q", st.FirstMismatch)
	}
	for _, s := range d.Solves {
		if s.Plant != "good" {
			t.Errorf("solve of plant %s kept", s.Plant)
		}
	}

	// The whole log read as the pump station: every record is of another family.
	ps, err := pumpstation.NewFamily(pumpstation.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	d = read(t, Options{Family: ps}, dir)
	if d.Stats.Masters != 0 || d.Stats.OtherFamily != d.Stats.Selected-countPlant(t, dir, "pump") {
		t.Errorf("read as pumpstation: %+v", d.Stats)
	}
}

func countPlant(t *testing.T, dir, plant string) int {
	recs, err := telemetry.ReadAll(telemetry.Filter{Plants: []string{plant}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// TestWindowAndPlantFilters selects by time and by plant.
func TestWindowAndPlantFilters(t *testing.T) {
	dir := t.TempDir()
	fam := synthesisFamily()
	writeLog(t, dir, telemetry.LogOptions{},
		logSpec{plant: "a", family: fam, instances: synthesisInstances(8, 4, true)},
		logSpec{plant: "b", family: fam, instances: synthesisInstances(9, 4, true)})
	all := read(t, Options{}, dir)
	onlyB := read(t, Options{Plants: []string{"b"}}, dir)
	if onlyB.Stats.Masters == 0 || onlyB.Stats.Masters >= all.Stats.Masters {
		t.Fatalf("plant b: %d of %d masters", onlyB.Stats.Masters, all.Stats.Masters)
	}
	for _, s := range onlyB.Solves {
		if s.Plant != "b" {
			t.Fatalf("plant filter kept %s", s.Plant)
		}
	}
	// A window starting at plant b's first record selects exactly plant b's records.
	from := onlyB.Solves[0].Start
	win := read(t, Options{From: from}, dir)
	if win.Stats.Masters != onlyB.Stats.Masters || win.Stats.Selected != onlyB.Stats.Selected {
		t.Errorf("window from %v: %d masters, %d records; plant b has %d, %d", from, win.Stats.Masters, win.Stats.Selected,
			onlyB.Stats.Masters, onlyB.Stats.Selected)
	}
	// [first, first+1ms) holds one record; To is exclusive.
	first := all.Solves[0].Start
	one := read(t, Options{From: first, To: first.Add(time.Millisecond)}, dir)
	if one.Stats.Selected != 1 {
		t.Errorf("one-record window selected %d", one.Stats.Selected)
	}
	none := read(t, Options{To: first}, dir)
	if none.Stats.Selected != 0 {
		t.Errorf("window ending at the first record selected %d", none.Stats.Selected)
	}
}

// TestHoldOutIsTheLatest checks that the held-out slice is the latest solves and never splits one.
func TestHoldOutIsTheLatest(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, telemetry.LogOptions{}, logSpec{plant: "s1", family: synthesisFamily(), instances: synthesisInstances(10, 10, true), starts: 2})
	d := read(t, Options{}, dir)
	for _, tc := range []struct {
		frac float64
		want int
	}{{0.2, 4}, {0.25, 5}, {0.01, 1}, {0, 0}, {0.999, 19}} {
		sp, err := HoldOut(d, tc.frac)
		if err != nil {
			t.Fatal(err)
		}
		if len(sp.HeldOutSolves) != tc.want || len(sp.TrainSolves)+len(sp.HeldOutSolves) != len(d.Solves) {
			t.Errorf("fraction %v: %d held out, want %d", tc.frac, len(sp.HeldOutSolves), tc.want)
			continue
		}
		if len(sp.Train.Samples)+len(sp.HeldOut.Samples) != len(d.Dataset.Samples) {
			t.Errorf("fraction %v: samples lost", tc.frac)
		}
		var lastTrain time.Time
		for _, s := range sp.TrainSolves {
			if s.End.After(lastTrain) {
				lastTrain = s.End
			}
		}
		for _, s := range sp.HeldOutSolves {
			if !s.Start.After(lastTrain) {
				t.Errorf("fraction %v: held-out solve %s starts %v, not after the training slice ends %v", tc.frac, s.ID, s.Start, lastTrain)
			}
		}
		held := map[int]bool{}
		for _, s := range sp.HeldOutSolves {
			held[s.Set] = true
		}
		for _, s := range sp.HeldOut.Samples {
			if !held[s.Set] {
				t.Errorf("fraction %v: held-out sample of training solve %d", tc.frac, s.Set)
			}
		}
		for _, s := range sp.Train.Samples {
			if held[s.Set] {
				t.Errorf("fraction %v: training sample of held-out solve %d", tc.frac, s.Set)
			}
		}
	}
	if _, err := HoldOut(d, 1); err == nil {
		t.Error("hold-out fraction 1 accepted")
	}
}

// TestPumpStationLabels does the same on the pump station, whose Y_pb of 889 assignments makes
// incremental labelling matter, and whose masters all carry feasibility cuts.
func TestPumpStationLabels(t *testing.T) {
	fam, ins := pumpInstances(t, 11, 3)
	dir := t.TempDir()
	logged, _ := writeLog(t, dir, telemetry.LogOptions{}, logSpec{plant: "p1", family: fam, instances: ins})
	d := read(t, Options{Family: fam}, dir)
	if !slices.Equal(labelsOf(d), logged[0]) {
		t.Fatalf("replayed labels %v\nlogged %v", labelsOf(d), logged[0])
	}
	if d.Stats.Masters < 10 || countFeas(d) == 0 {
		t.Errorf("%d masters, %d with feasibility cuts", d.Stats.Masters, countFeas(d))
	}
	// Whatever the chunking, the labels are the same.
	if d1 := read(t, Options{Family: fam, Workers: 1}, dir); !slices.Equal(labelsOf(d1), labelsOf(d)) {
		t.Error("labels depend on the number of workers")
	}
}

// TestSoftRecordsLeftOut: records of a soft-constrained solve (telemetry.ProblemSoft) are counted
// and left out of the dataset and the solves; the hard solves of the same log are read as before.
func TestSoftRecordsLeftOut(t *testing.T) {
	dir, clock, l, fam, good := goodLog(t, "p", 3)
	soft := 0
	runInto(t, forgeSink{l, func(r *telemetry.Record) {
		r.Problem = telemetry.ProblemSoft
		r.SolveID += "-soft"
		soft++
	}}, clock, logSpec{plant: "p", family: fam, instances: synthesisInstances(8, 2, true)})
	closeLog(t, l)

	d := read(t, Options{}, dir)
	if !slices.Equal(labelsOf(d), good) || d.Stats.SoftRecords != soft || len(d.Solves) != 3 {
		t.Errorf("labels %v (want %v), soft records %d (want %d), %d solves (want 3)", labelsOf(d), good, d.Stats.SoftRecords, soft, len(d.Solves))
	}
	for _, s := range d.Solves {
		if strings.HasSuffix(s.ID, "-soft") {
			t.Errorf("soft solve %s kept", s.ID)
		}
	}
}
