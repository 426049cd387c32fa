package gbd

// MasterView is what a policy sees of the current master problem M (paper eq. for M): every
// accumulated cut, the previous iterate y^k, and the admissible set Y_pb that defines the action space.
// A policy must not modify it.
type MasterView struct {
	Cuts []Cut
	Prev []float64 // previous master iterate y^k, len NY
	Ypb  *Admissible
	// Candidates is how many of its best-scored assignments a policy that decodes its own may
	// screen by the optimality cuts (Settings.Candidates; ≤ 1: it proposes its best-scored one).
	Candidates int
}

// Proposal is a policy's answer. Exactly one of the fields is set:
//   - Logits, one per assignment of Y_pb in its order (the proposed feasibility-aware agent): ŷ = Y_pb[argmax];
//   - Probs, one probability per binary (the independent-IL agent of Agyeman et al.): each rounded
//     with the thresholds 0.75/0.25; a value between them leaves the binary undecided and the
//     proposal is rejected;
//   - Assign, the proposed ŷ itself (a policy for spaces too large to enumerate, which decodes its
//     own per-binary outputs): it must be a 0/1 vector in Y_pb.
type Proposal struct {
	Logits []float64
	Probs  []float64
	Assign []float64
}

// Policy proposes master-problem solutions (the agent π_θ of Algorithm 2). Implementations must be
// safe for use by one goroutine at a time; the engine never calls one concurrently.
type Policy interface {
	Propose(v *MasterView) (Proposal, error)
}
