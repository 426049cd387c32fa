// Package replay is the offline half of gbdmpc's learning loop: it turns the daemon's decision log
// back into expert data, retrains the master-problem agent on what the plant actually saw, and
// decides, by shadow evaluation on the latest part of the log, whether the new policy may replace
// the running one. `gbdmpc replay` is its command; the daemon's policy reload picks up the file it
// writes.
//
// # Replay (Read)
//
// Read streams decision-log segments (directories or files, plain or gzipped) with telemetry's
// Reader, one reader per segment in parallel, since decoding JSON is most of the cost and segments
// are independent. A torn tail or a cut-short gzipped segment is what a crash leaves and is skipped
// and counted (Stats.Torn); a corrupt line is skipped and counted (Stats.Skipped) unless Strict; a
// record of another schema version stops the replay, as telemetry requires.
//
// Records are selected by the window [From, To) and plant ids, then checked against the family: a
// record of another family, or a master whose Y_pb (binaries, signature, size) is not the family's,
// is rejected and counted — the first mismatch is described, because it usually means a plant was
// reconfigured — and a solve with such a master is dropped whole. Records of a soft-constrained
// solve (telemetry.ProblemSoft: the plant's hard limits could not be held) are counted and left out:
// the logged instance rebuilds the hard problem, which their cuts do not belong to. The hard solve
// of such a step, which proved the limits infeasible or found no plan, is kept like any other.
//
// Each master record is rebuilt as the engine saw it — its cuts φ(y) = a·y + c with kind, the
// previous iterate y^k, the family's Y_pb — and labelled with its exact optimum by enum.Master,
// the expert of the paper's Algorithm 1:
//
//	j* = argmin_{j : φ_f(Y_pb[j]) ≤ gbd.FeasTol ∀ feasibility cuts} max_{optimality cuts} φ_o(Y_pb[j]),
//
// ties to the earliest j. A master whose feasibility cuts exclude all of Y_pb has no label (the
// logged solve ended there) and is counted. GBD only adds cuts, so consecutive masters of a solve
// are labelled incrementally: O(K) cut insertions for a solve of K masters instead of O(K²).
// Stats.MastersPerSecond is the throughput, reading included.
//
// The result is a policy.Dataset whose Sample.Set is the solve's index in time order, so that no
// split ever separates the masters of one solve, which share most of their cuts.
//
// # Retraining (HoldOut, Retrain)
//
// HoldOut keeps the latest fraction of solves by start time (default 20%) for judging: never a
// random split, because a plant drifts and a random split would let the new policy learn from after
// the states it is judged on. Retrain fine-tunes the old policy (stage 2 of Algorithm 1 on its
// frozen graph layers, the default), continues it (both stages again from its weights and
// normalisation, policy.Continue: the graph layers adapt too), or runs both stages from scratch.
//
// # Shadow evaluation and the gate (Shadow, Gate)
//
// Shadow scores both policies on the held-out masters (policy.Evaluate: exact match, feasibility)
// and re-runs every held-out solve: its MINLP is rebuilt from the logged instance through the
// family (DecodeMeasurement, Problem), started from the logged y^0 with the logged carried cuts,
// and solved by classical GBD and by agent-based GBD (Algorithm 2) with each policy, on the same
// master back-end. It reports acceptance (accepted/proposed), master time, iterations, and whether
// each run reaches classical GBD's optimum within ε.
//
// Gate states when the new policy is at least as good as the old one: not fewer exact matches, not
// fewer feasible decisions, not fewer re-runs matching classical GBD, and an acceptance rate not
// lower by more than a tolerance (default 2 percentage points, because with a time-limited master
// acceptance depends on timing). Run writes the new policy only when the gate passes or when forced;
// given a report directory, it writes the Markdown and JSON report either way.
package replay
