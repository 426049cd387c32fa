package policy

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gbdmpc/gbd"
	"gbdmpc/gbd/master/staged"
)

// Variant names what an agent was trained as.
type Variant string

const (
	// Proposed is the paper's agent: |Y_pb| logits, stage 1 then the feasibility-aware stage 2.
	Proposed Variant = "proposed"
	// Baseline is the same network after stage 1 only (the paper's ablation).
	Baseline Variant = "baseline"
	// Independent is the independent-IL agent: NY sigmoid outputs trained with binary cross-entropy.
	Independent Variant = "independent"
	// Structured is the agent for action spaces too large to enumerate: one score per binary (the
	// independent agent's outputs, trained the same way in stage 1 and with a penalty over the
	// feasibility cuts in stage 2), decoded exactly into the admissible assignment of greatest score
	// that the master's feasibility cuts allow (staged.Decoder). Its proposals are admissible and
	// pass Algorithm 2's feasibility screen by construction. Y_pb must be staged.
	Structured Variant = "structured"
)

func (v Variant) valid() bool {
	return v == Proposed || v == Baseline || v == Independent || v == Structured
}

// perBinary reports whether the variant has one output per binary instead of one per assignment.
func (v Variant) perBinary() bool { return v == Independent || v == Structured }

// Inference is how an agent with logits over Y_pb forms the logits it proposes.
type Inference string

const (
	// Raw proposes the network's logits ℓ = π_θ(G), as the paper's Algorithm 2 does. The default.
	Raw Inference = "raw"
	// Adjusted proposes the feasibility-adjusted logits ℓ̃ = ℓ − ω·s that stage 2 trains on, s
	// computed from the master's own feasibility cuts. Not in the paper's Algorithm 2. Training no
	// longer produces it (on synthesis it changes at most one decision in 1,429: ω·s is ~0.06); it
	// remains what policy files from before the choice existed do, so that they load and act as they
	// did, and a way for Table I to score any agent (EvaluateAs).
	Adjusted Inference = "adjusted"
)

func (m Inference) valid() bool { return m == Raw || m == Adjusted }

// DefaultOmega is the paper's ω, used to score an agent trained without stage 2 (the baseline) with
// adjusted logits.
const DefaultOmega = 0.1

// TrainMeta records how an agent came to be; it travels in the policy file.
type TrainMeta struct {
	Seed   uint64      `json:"seed"`
	Stage1 StageConfig `json:"stage1"`
	Stage2 StageConfig `json:"stage2"` // zero when stage 2 did not run
	// Stage2Samples, Stage2Sets and Stage2Seed describe the data and seed of stage 2, which a
	// fine-tune runs on other data than stage 1 (TrainSamples, TrainSets, Seed).
	Stage2Samples int    `json:"stage2_samples,omitempty"`
	Stage2Sets    int    `json:"stage2_sets,omitempty"`
	Stage2Seed    uint64 `json:"stage2_seed,omitempty"`
	// Stage2Omega is the structured agent's stage-2 penalty weight ω (a proposed agent keeps its ω
	// as the agent's, since adjusted inference uses it).
	Stage2Omega  float64  `json:"stage2_omega,omitempty"`
	TrainSamples int      `json:"train_samples"`
	TrainSets    int      `json:"train_sets"`
	WallSeconds  float64  `json:"wall_seconds"`
	Date         string   `json:"date,omitempty"` // RFC 3339, UTC
	HeldOut      *Metrics `json:"held_out,omitempty"`
}

// Agent is a trained policy: it implements gbd.Policy over one family's Y_pb. Like every gbd.Policy it
// must be used by one goroutine at a time, because Propose reuses internal buffers.
type Agent struct {
	variant Variant
	family  string
	ypb     *gbd.Admissible
	norm    Norm
	net     network
	omega   float64 // ω of the feasibility adjustment; non-zero only for the proposed variant
	infer   Inference
	meta    TrainMeta
	version string

	// inference state, reused across calls
	g      graph
	ws     *workspace
	ymat   []float64 // Y_pb as a |Y_pb| × NY matrix
	s, adj []float64 // infeasibility scores and adjusted logits
	f, v   []float64 // scratch of infeasibility
	probs  []float64
	dec    staged.Decoder // the structured agent's decoder
	assign []float64      // the structured agent's proposal
}

var _ gbd.Policy = (*Agent)(nil)

// newAgent builds an agent with freshly initialised weights.
func newAgent(variant Variant, arch Arch, family string, ypb *gbd.Admissible, nm Norm, rng *rand.Rand) (*Agent, error) {
	lay, err := agentLayout(variant, arch, ypb)
	if err != nil {
		return nil, err
	}
	a := &Agent{variant: variant, family: family, ypb: ypb, norm: nm, infer: Raw, net: network{lay: lay, p: lay.initParams(rng)}}
	a.init()
	return a, nil
}

func agentLayout(variant Variant, arch Arch, ypb *gbd.Admissible) (*layout, error) {
	if !variant.valid() {
		return nil, fmt.Errorf("unknown variant %q", variant)
	}
	if ypb != nil && ypb.Implicit() && variant != Structured {
		return nil, fmt.Errorf("Y_pb is too large to enumerate: the %s agent classifies over an enumerated Y_pb (the structured agent does not)", variant)
	}
	if ypb == nil || ypb.NY <= 0 || ypb.Empty() {
		return nil, errors.New("empty admissible set")
	}
	if variant == Structured && ypb.Stages == nil {
		return nil, errors.New("the structured agent decodes over the stages of Y_pb, and this one has none")
	}
	nout := ypb.Count()
	if variant.perBinary() {
		nout = ypb.NY
	}
	return newLayout(arch.resolved(), ypb.NY, nout)
}

// init prepares inference buffers and the version; call after the parameters are final.
func (a *Agent) init() {
	a.ws = newWorkspace(a.net.lay)
	a.ymat = ypbMatrix(a.ypb)
	a.s = make([]float64, a.ypb.Count())
	a.adj = make([]float64, a.ypb.Count())
	a.probs = make([]float64, a.ypb.NY)
	a.assign = make([]float64, a.ypb.NY)
	a.version = a.modelHash()[:12]
}

// clone returns an independent copy (own parameters and buffers) with the same metadata.
func (a *Agent) clone() *Agent {
	c := &Agent{variant: a.variant, family: a.family, ypb: a.ypb, norm: a.norm, omega: a.omega, infer: a.infer, meta: a.meta,
		net: network{lay: a.net.lay, p: append([]float64(nil), a.net.p...)}}
	c.init()
	return c
}

// Propose encodes the master problem as a graph and runs the network. It returns Logits, one per
// assignment of Y_pb, for the baseline and proposed agents: the network's outputs ℓ, or with
// Inference() == Adjusted the feasibility-adjusted ℓ̃ = ℓ − ω·s (s from the view's feasibility
// cuts); Probs, σ of each binary's output, for the independent agent; Assign, the decoded
// assignment, for the structured agent (an error when the feasibility cuts exclude every
// admissible assignment: there is nothing to propose). The returned slice aliases the agent's
// storage and is valid until the next call. After the first call on a master problem of a given
// size, Propose does not allocate (the structured agent's decoder does, per new cut).
func (a *Agent) Propose(v *gbd.MasterView) (gbd.Proposal, error) {
	if err := a.checkView(v); err != nil {
		return gbd.Proposal{}, err
	}
	return a.propose(v, a.infer, a.omega)
}

// propose runs a validated view with the given inference; omega is ω for Adjusted.
func (a *Agent) propose(v *gbd.MasterView, infer Inference, omega float64) (gbd.Proposal, error) {
	out := a.rawOutputs(v)
	switch {
	case a.variant == Structured:
		own := *v
		own.Ypb = a.ypb // the same set (checkView), with the stages the policy was trained over
		if err := a.dec.Screened(&own, out, v.Candidates, a.assign); err != nil {
			return gbd.Proposal{}, fmt.Errorf("policy %s: %w", a.version, err)
		}
		return gbd.Proposal{Assign: a.assign}, nil
	case a.variant == Independent:
		for i, z := range out {
			a.probs[i] = sigmoid(z)
		}
		return gbd.Proposal{Probs: a.probs}, nil
	case infer == Adjusted:
		a.f, a.v = infeasibility(v.Cuts, a.ymat, a.ypb.NY, a.s, a.f, a.v)
		adjustLogits(a.adj, out, a.s, omega)
		return gbd.Proposal{Logits: a.adj}, nil
	}
	return gbd.Proposal{Logits: out}, nil
}

// rawOutputs runs the network on a validated view.
func (a *Agent) rawOutputs(v *gbd.MasterView) []float64 {
	a.g.encode(v.Cuts, v.Prev, &a.norm, &a.net.lay.arch)
	return a.net.forward(&a.g, a.ws)
}

func (a *Agent) checkView(v *gbd.MasterView) error {
	if v == nil {
		return errors.New("policy: nil master view")
	}
	if v.Ypb == nil {
		return errors.New("policy: master view has no admissible set")
	}
	if !sameSpace(v.Ypb, a.ypb) {
		return fmt.Errorf("policy %s: master's admissible set (%d binaries, signature %.12s…) is not the policy's (%d binaries, %.12s…)",
			a.version, v.Ypb.NY, v.Ypb.Signature, a.ypb.NY, a.ypb.Signature)
	}
	if err := checkMaster(v.Cuts, v.Prev, a.ypb.NY); err != nil {
		return fmt.Errorf("policy %s: %w", a.version, err)
	}
	return nil
}

// CheckFits reports whether the agent was trained for this family and action space, so that a daemon
// can refuse a policy file before its first control step.
func (a *Agent) CheckFits(family string, ypb *gbd.Admissible) error {
	if family != a.family {
		return fmt.Errorf("policy %s is for family %q, not %q", a.version, a.family, family)
	}
	if ypb == nil {
		return fmt.Errorf("policy %s: no admissible set to check against", a.version)
	}
	if !sameSpace(ypb, a.ypb) {
		return fmt.Errorf("policy %s: admissible set differs (%d binaries, %d assignments, signature %.12s… here; %d, %d, %.12s… in the policy)",
			a.version, ypb.NY, ypb.Count(), ypb.Signature, a.ypb.NY, a.ypb.Count(), a.ypb.Signature)
	}
	return nil
}

// Version is a short hash of everything that determines the agent's outputs (variant, family, Y_pb,
// architecture, normalisation, weights); training metadata does not change it.
func (a *Agent) Version() string { return a.version }

// Variant reports how the agent was trained.
func (a *Agent) Variant() Variant { return a.variant }

// Family is the plant family the agent was trained on.
func (a *Agent) Family() string { return a.family }

// Ypb is the ordered admissible set that indexes the agent's logits. Callers must not modify it.
func (a *Agent) Ypb() *gbd.Admissible { return a.ypb }

// Arch is the network's shape.
func (a *Agent) Arch() Arch { return a.net.lay.arch.resolved() }

// Omega is the ω of the proposed agent's feasibility adjustment (0 for the other variants).
func (a *Agent) Omega() float64 { return a.omega }

// Inference is how the agent forms the logits it proposes (Raw for every variant but a proposed
// agent set to Adjusted).
func (a *Agent) Inference() Inference { return a.infer }

// withInference returns a copy of a proposed agent that proposes with the given inference; its
// Version changes with it, since its outputs do.
func (a *Agent) withInference(m Inference) (*Agent, error) {
	if !m.valid() {
		return nil, fmt.Errorf("policy: unknown inference %q (want %q or %q)", m, Raw, Adjusted)
	}
	if m != Raw && a.variant != Proposed {
		return nil, fmt.Errorf("policy: a %s agent proposes its raw outputs; only a proposed agent has an ω to adjust with", a.variant)
	}
	c := a.clone()
	c.infer = m
	c.init()
	return c, nil
}

// Meta returns a copy of the training metadata.
func (a *Agent) Meta() TrainMeta {
	m := a.meta
	if m.HeldOut != nil {
		h := *m.HeldOut
		m.HeldOut = &h
	}
	return m
}

// SetHeldOut records held-out metrics to be saved with the policy.
func (a *Agent) SetHeldOut(m Metrics) { a.meta.HeldOut = &m }
