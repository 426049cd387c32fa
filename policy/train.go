package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"gbdmpc/gbd"
)

// StageConfig is one training stage's optimiser settings; zero fields take the paper's values.
type StageConfig struct {
	LR     float64 `json:"lr"`
	Batch  int     `json:"batch"`
	Epochs int     `json:"epochs"`
	// WeightDecay is AdamW's decoupled decay (every step multiplies each weight by 1 − lr·decay);
	// 0, the paper's plain Adam, by default.
	WeightDecay float64 `json:"weight_decay,omitempty"`
}

// TrainConfig configures Algorithm 1. The zero value reproduces the paper: the proposed variant, three
// ECC layers of 64, dense 64 and 32, stage 1 with lr 1e-3, stage 2 with lr 1e-4 and ω = 0.1, both with
// batch 8 for 20 epochs, Adam (β1 0.9, β2 0.999, ε 1e-8).
type TrainConfig struct {
	Variant Variant // "" means Proposed
	Arch    Arch
	Seed    uint64      // weight initialisation and shuffling; same seed and data give identical weights
	Stage1  StageConfig // defaults: lr 1e-3, batch 8, 20 epochs
	Stage2  StageConfig // defaults: lr 1e-4, batch 8, 20 epochs; ignored unless Variant is Proposed
	Omega   float64     // stage-2 penalty ω; 0 means 0.1
	// Workers splits each stage-1 minibatch's per-sample forward/backward passes; 0 means GOMAXPROCS.
	// The result does not depend on it.
	Workers int
	// Progress, when set, is called after every epoch.
	Progress func(EpochMetrics)
	// Now stamps the metadata's date and wall time; nil means time.Now. Training itself never reads it.
	Now func() time.Time
}

// EpochMetrics summarise one epoch, accumulated over the minibatches as they were trained.
type EpochMetrics struct {
	Stage, Epoch, Epochs int
	Loss                 float64 // mean per-sample loss (stage 2: feasibility-adjusted cross-entropy)
	Accuracy             float64 // fraction whose decision equals the expert's
	Feasible             float64 // among samples with feasibility cuts, fraction whose decision satisfies them
}

func (c TrainConfig) withDefaults() TrainConfig {
	if c.Variant == "" {
		c.Variant = Proposed
	}
	c.Arch = c.Arch.resolved()
	def := func(s *StageConfig, lr float64) {
		if s.LR == 0 {
			s.LR = lr
		}
		if s.Batch == 0 {
			s.Batch = 8
		}
		if s.Epochs == 0 {
			s.Epochs = 20
		}
	}
	def(&c.Stage1, 1e-3)
	def(&c.Stage2, 1e-4)
	if c.Omega == 0 {
		c.Omega = DefaultOmega
	}

	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *TrainConfig) validate() error {
	if !c.Variant.valid() {
		return fmt.Errorf("train: unknown variant %q", c.Variant)
	}
	for i, s := range []StageConfig{c.Stage1, c.Stage2} {
		if !(s.LR > 0) || s.Batch < 1 || s.Epochs < 1 || !(s.WeightDecay >= 0 && s.LR*s.WeightDecay < 1) {
			return fmt.Errorf("train: stage %d needs lr > 0, batch ≥ 1, epochs ≥ 1 and 0 ≤ lr·weight decay < 1, got %+v", i+1, s)
		}
	}
	if !(c.Omega > 0) || math.IsInf(c.Omega, 0) {
		return fmt.Errorf("train: ω = %v must be positive and finite", c.Omega)
	}
	return nil
}

// Train runs Algorithm 1 on ds: stage 1 (cross-entropy on the expert index, or binary cross-entropy for
// the independent variant), then for the proposed variant stage 2 (FineTune). Normalisation statistics
// are fitted on ds. ctx is checked between minibatches.
func Train(ctx context.Context, ds *Dataset, cfg TrainConfig) (*Agent, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := trainable(ds); err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	start := cfg.Now()
	stage1Variant := cfg.Variant
	if stage1Variant == Proposed {
		stage1Variant = Baseline
	}
	a, err := newAgent(stage1Variant, cfg.Arch, ds.Family, ds.Ypb, FitNorm(ds.Samples, cfg.Arch), rand.New(rand.NewPCG(cfg.Seed, 1)))
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	graphs := encodeAll(ds.Samples, &a.norm, &cfg.Arch)
	if err := stage1(ctx, a, ds, graphs, cfg); err != nil {
		return nil, err
	}
	a.meta = TrainMeta{Seed: cfg.Seed, Stage1: cfg.Stage1, TrainSamples: len(ds.Samples), TrainSets: countSets(ds.Samples)}
	if cfg.Variant == Proposed || cfg.Variant == Structured {
		if err := stage2(ctx, a, ds, graphs, cfg); err != nil {
			return nil, err
		}
	}
	a.meta.WallSeconds = cfg.Now().Sub(start).Seconds()
	a.meta.Date = start.UTC().Format(time.RFC3339)
	a.init()
	return a, nil
}

// FineTune runs stage 2 of Algorithm 1 on a copy of a stage-1 agent and returns it as a proposed agent;
// base is not modified. Training a baseline once and fine-tuning it gives both of the paper's agents
// from one stage-1 run. The base's normalisation is kept, since the frozen graph layers were trained on it.
func FineTune(ctx context.Context, base *Agent, ds *Dataset, cfg TrainConfig) (*Agent, error) {
	cfg.Variant = Proposed
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if base.variant == Independent {
		return nil, errors.New("fine-tune: the independent agent has no logits over Y_pb to adjust")
	}
	if err := retrainable(base, ds); err != nil {
		return nil, fmt.Errorf("fine-tune: %w", err)
	}
	start := cfg.Now()
	a := base.clone()
	if err := stage2(ctx, a, ds, encodeAll(ds.Samples, &a.norm, &a.net.lay.arch), cfg); err != nil {
		return nil, err
	}
	retrained(a, start, cfg)
	return a, nil
}

// Continue runs Algorithm 1 again from base's weights instead of fresh ones: stage 1 on every
// parameter (a proposed base trains there as the baseline it was before its stage 2), then, for a
// proposed base, stage 2. The base's architecture, variant and normalisation are kept (its graph
// layers were trained on that normalisation), so the result is a drop-in replacement that keeps
// what the base learned and adapts its graph layers to ds too, which FineTune cannot. cfg's
// Variant and Arch are ignored; base is not modified.
func Continue(ctx context.Context, base *Agent, ds *Dataset, cfg TrainConfig) (*Agent, error) {
	cfg.Variant, cfg.Arch = base.variant, base.Arch()
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := retrainable(base, ds); err != nil {
		return nil, fmt.Errorf("continue: %w", err)
	}
	start := cfg.Now()
	a := base.clone()
	if a.variant == Proposed {
		a.variant, a.omega, a.infer = Baseline, 0, Raw
	}
	graphs := encodeAll(ds.Samples, &a.norm, &a.net.lay.arch)
	if err := stage1(ctx, a, ds, graphs, cfg); err != nil {
		return nil, err
	}
	a.meta.Seed, a.meta.Stage1, a.meta.Stage2 = cfg.Seed, cfg.Stage1, StageConfig{}
	a.meta.TrainSamples, a.meta.TrainSets = len(ds.Samples), countSets(ds.Samples)
	if base.variant == Proposed || base.variant == Structured {
		if err := stage2(ctx, a, ds, graphs, cfg); err != nil {
			return nil, err
		}
	}
	retrained(a, start, cfg)
	return a, nil
}

// retrainable checks that ds can train further from base: same family and Y_pb, samples present.
func retrainable(base *Agent, ds *Dataset) error {
	if err := base.CheckFits(ds.Family, ds.Ypb); err != nil {
		return err
	}
	return trainable(ds)
}

// retrained closes a training run that started from a trained agent: it adds the run's time and
// date, drops the base's held-out scores (they were not measured on the new agent) and readies it.
func retrained(a *Agent, start time.Time, cfg TrainConfig) {
	a.meta.WallSeconds += cfg.Now().Sub(start).Seconds()
	a.meta.Date = start.UTC().Format(time.RFC3339)
	a.meta.HeldOut = nil
	a.init()
}

func trainable(ds *Dataset) error {
	if err := ds.Validate(); err != nil {
		return err
	}
	if len(ds.Samples) == 0 {
		return errors.New("no samples")
	}
	return nil
}

// graphSet gives training each sample's encoded graph: all encoded once up front while they fit
// in maxEncoded coefficients (a few hundred MB), encoded again at each use beyond. On the 40-binary
// station a master carries ~400 cuts of 40 coefficients: 15,000 of them encoded up front took more
// than 8 GB, and training ran the machine out of memory.
type graphSet struct {
	all     []graph // nil: encode at each use
	samples []Sample
	nm      *Norm
	arch    *Arch
}

// maxEncoded bounds Σ cuts × binaries over the samples whose graphs are kept encoded (a variable
// so that a test can train both ways).
var maxEncoded = 1 << 25

func encodeAll(samples []Sample, nm *Norm, arch *Arch) *graphSet {
	gs := &graphSet{samples: samples, nm: nm, arch: arch}
	size := 0
	for i := range samples {
		size += len(samples[i].Cuts) * len(samples[i].Prev)
	}
	if size > maxEncoded {
		return gs
	}
	gs.all = make([]graph, len(samples))
	for i := range samples {
		gs.all[i].encode(samples[i].Cuts, samples[i].Prev, nm, arch)
		gs.all[i].cm = cutMapper{} // scratch; not kept for every sample
	}
	return gs
}

func (gs *graphSet) len() int { return len(gs.samples) }

// get is sample i's graph: the kept one, or encoded into scratch (one per goroutine), which it
// stays in until the next get with the same scratch.
func (gs *graphSet) get(i int, scratch *graph) *graph {
	if gs.all != nil {
		return &gs.all[i]
	}
	scratch.encode(gs.samples[i].Cuts, gs.samples[i].Prev, gs.nm, gs.arch)
	return scratch
}

func countSets(samples []Sample) int {
	seen := map[int]bool{}
	for i := range samples {
		seen[samples[i].Set] = true
	}
	return len(seen)
}

// stage1 trains every parameter. Each minibatch's samples are spread over the workers, but every sample
// writes its gradient into its own slot and the slots are summed in sample order, so the result is the
// same bit for bit whatever the number of workers and however they are scheduled.
func stage1(ctx context.Context, a *Agent, ds *Dataset, graphs *graphSet, cfg TrainConfig) error {
	sc := cfg.Stage1
	nw := &a.net
	size := nw.lay.size
	workers := min(cfg.Workers, sc.Batch)
	type worker struct {
		ws               *workspace
		dout, buf, probs []float64
		g                graph
	}
	ws := make([]worker, workers)
	for w := range ws {
		ws[w] = worker{ws: newWorkspace(nw.lay), dout: make([]float64, nw.lay.nout),
			buf: make([]float64, ds.Ypb.NY), probs: make([]float64, nw.lay.nout)}
	}
	slots := make([][]float64, sc.Batch)
	for b := range slots {
		slots[b] = make([]float64, size)
	}
	res := make([]outcome, sc.Batch)
	grad := make([]float64, size)
	opt := newAdam(sc.LR, size)
	opt.decay = sc.WeightDecay
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	perm := make([]int, graphs.len())
	for i := range perm {
		perm[i] = i
	}

	one := func(w, b, i int) {
		wk := &ws[w]
		s := &ds.Samples[i]
		slot := slots[b]
		clear(slot)
		g := graphs.get(i, &wk.g)
		out := nw.forward(g, wk.ws)
		var prop gbd.Proposal
		switch a.variant {
		case Independent:
			res[b].loss = binaryCE(out, ds.Ypb.At(s.Label), wk.dout)
			for k, z := range out {
				wk.probs[k] = sigmoid(z)
			}
			prop.Probs = wk.probs
		case Structured:
			res[b].loss = binaryCE(out, s.bits(ds.Ypb), wk.dout)
			prop.Assign = rounded(out, wk.probs)
		default:
			res[b].loss = crossEntropy(out, s.Label, wk.dout)
			prop.Logits = out
		}
		res[b].judge(ds.Ypb, s, prop, wk.buf)
		nw.backward(g, wk.ws, wk.dout, slot)
	}

	for epoch := 1; epoch <= sc.Epochs; epoch++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var tally epochTally
		for lo := 0; lo < len(perm); lo += sc.Batch {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("train: stage 1 epoch %d: %w", epoch, err)
			}
			idx := perm[lo:min(lo+sc.Batch, len(perm))]
			if workers == 1 {
				for b, i := range idx {
					one(0, b, i)
				}
			} else {
				var wg sync.WaitGroup
				for w := 0; w < workers; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						for b := w; b < len(idx); b += workers {
							one(w, b, idx[b])
						}
					}(w)
				}
				wg.Wait()
			}
			copy(grad, slots[0])
			for b := 1; b < len(idx); b++ {
				for k, v := range slots[b] {
					grad[k] += v
				}
			}
			inv := 1 / float64(len(idx))
			for k := range grad {
				grad[k] *= inv
			}
			opt.step(nw.p, grad)
			for b := range idx {
				tally.add(res[b])
			}
		}
		if cfg.Progress != nil {
			cfg.Progress(tally.metrics(1, epoch, sc.Epochs))
		}
	}
	return nil
}

// stage2 fine-tunes the dense and output layers with the feasibility-adjusted cross-entropy while the
// graph layers stay frozen. Frozen graph layers make each sample's pooled embedding a constant, so it is
// computed once and the head is trained on it: an epoch then costs a few small matrix–vector products
// per sample instead of a full graph pass, which is also why the head is trained on one goroutine.
func stage2(ctx context.Context, a *Agent, ds *Dataset, graphs *graphSet, cfg TrainConfig) error {
	sc := cfg.Stage2
	nw := &a.net
	lay := nw.lay
	n, width, np := graphs.len(), lay.headWidth(), ds.Ypb.Count()
	structured := a.variant == Structured
	if structured {
		np = 0 // no per-assignment scores: the penalty is over the cuts at σ(z)
	}

	pooled := make([]float64, n*width)
	workers := max(1, min(cfg.Workers, n))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ws := newWorkspace(lay)
			var g graph
			for i := w; i < n; i += workers {
				copy(pooled[i*width:(i+1)*width], nw.forwardGraph(graphs.get(i, &g), ws))
			}
		}(w)
	}
	wg.Wait()

	scores := make([]float64, n*np)
	if !structured {
		ymat := ypbMatrix(ds.Ypb)
		var f, v []float64
		for i := range ds.Samples {
			f, v = infeasibility(ds.Samples[i].Cuts, ymat, ds.Ypb.NY, scores[i*np:(i+1)*np], f, v)
		}
	}

	ws := newWorkspace(lay)
	dout := make([]float64, lay.nout)
	adj := make([]float64, lay.nout)
	ybuf := make([]float64, ds.Ypb.NY)
	grad := make([]float64, lay.size)
	head := grad[lay.head:]
	opt := newAdam(sc.LR, len(head))
	opt.decay = sc.WeightDecay
	rng := rand.New(rand.NewPCG(cfg.Seed, 3))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for epoch := 1; epoch <= sc.Epochs; epoch++ {
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var tally epochTally
		for lo := 0; lo < n; lo += sc.Batch {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("train: stage 2 epoch %d: %w", epoch, err)
			}
			idx := perm[lo:min(lo+sc.Batch, n)]
			clear(head)
			for _, i := range idx {
				s := &ds.Samples[i]
				out := nw.forwardHead(pooled[i*width:(i+1)*width], ws)
				var r outcome
				if structured {
					r.loss = feasibilityBCE(out, s.bits(ds.Ypb), s.Cuts, cfg.Omega, dout, adj)
					r.judge(ds.Ypb, s, gbd.Proposal{Assign: rounded(out, adj)}, ybuf)
				} else {
					r.loss = feasibilityCE(out, scores[i*np:(i+1)*np], cfg.Omega, s.Label, dout, adj)
					r.judge(ds.Ypb, s, gbd.Proposal{Logits: out}, ybuf) // the raw logits, what the agent will propose
				}
				nw.backwardHead(ws, dout, grad, false)
				tally.add(r)
			}
			inv := 1 / float64(len(idx))
			for k := range head {
				head[k] *= inv
			}
			opt.step(nw.p[lay.head:], head)
		}
		if cfg.Progress != nil {
			cfg.Progress(tally.metrics(2, epoch, sc.Epochs))
		}
	}
	if structured {
		a.meta.Stage2Omega = cfg.Omega // a training weight only: the decoder has no ω
	} else {
		a.variant, a.omega = Proposed, cfg.Omega
	}
	a.infer = Raw
	a.meta.Stage2 = sc
	a.meta.Stage2Samples, a.meta.Stage2Sets, a.meta.Stage2Seed = len(ds.Samples), countSets(ds.Samples), cfg.Seed
	return nil
}

// rounded writes the structured agent's outputs rounded at σ = 1/2 into dst: the metric of its
// training epochs (its proposals are decoded over Y_pb and the cuts, which training does not pay for).
func rounded(z, dst []float64) []float64 {
	for i, v := range z {
		dst[i] = 0
		if v > 0 {
			dst[i] = 1
		}
	}
	return dst
}

// outcome is one sample's contribution to the epoch metrics.
type outcome struct {
	loss           float64
	match, hasFeas bool
	feasible       bool
}

// judge scores one training decision as Evaluate does; y (len NY) is scratch.
func (o *outcome) judge(ypb *gbd.Admissible, s *Sample, p gbd.Proposal, y []float64) {
	j, _ := gbd.Decide(ypb, p, y)
	o.match = j == s.Label
	if ypb.Implicit() {
		o.match = j >= 0 && slices.EqualFunc(y, s.Y, func(a float64, b uint8) bool { return a == float64(b) })
	}
	o.hasFeas = hasFeasibilityCut(s.Cuts)
	o.feasible = o.hasFeas && j >= 0 && gbd.SatisfiesFeasibilityCuts(s.Cuts, y)
}

type epochTally struct {
	n, match, nfeas, feas int
	loss                  float64
}

func (t *epochTally) add(o outcome) {
	t.n++
	t.loss += o.loss
	if o.match {
		t.match++
	}
	if o.hasFeas {
		t.nfeas++
		if o.feasible {
			t.feas++
		}
	}
}

func (t *epochTally) metrics(stage, epoch, epochs int) EpochMetrics {
	m := EpochMetrics{Stage: stage, Epoch: epoch, Epochs: epochs}
	if t.n > 0 {
		m.Loss = t.loss / float64(t.n)
		m.Accuracy = float64(t.match) / float64(t.n)
	}
	if t.nfeas > 0 {
		m.Feasible = float64(t.feas) / float64(t.nfeas)
	}
	return m
}

// adam is Adam (Kingma & Ba) with bias correction; β1 = 0.9, β2 = 0.999, ε = 1e-8. With decay > 0 it
// is AdamW (Loshchilov & Hutter): every parameter first shrinks by the factor 1 − lr·decay.
type adam struct {
	lr, b1t, b2t float64
	decay        float64
	m, v         []float64
}

func newAdam(lr float64, n int) *adam {
	return &adam{lr: lr, b1t: 1, b2t: 1, m: make([]float64, n), v: make([]float64, n)}
}

func (o *adam) step(p, g []float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	o.b1t *= b1
	o.b2t *= b2
	c1, c2 := 1/(1-o.b1t), 1/(1-o.b2t)
	if o.decay > 0 {
		f := 1 - o.lr*o.decay
		for i := range p[:len(g)] {
			p[i] *= f
		}
	}
	for i, gi := range g {
		o.m[i] = b1*o.m[i] + (1-b1)*gi
		o.v[i] = b2*o.v[i] + (1-b2)*gi*gi
		p[i] -= o.lr * (o.m[i] * c1) / (math.Sqrt(o.v[i]*c2) + eps)
	}
}
