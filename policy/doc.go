// Package policy is gbdmpc's learned master-problem agent: the feasibility-aware graph network of
// "Feasibility-aware imitation learning for Benders decomposition" (seed/ of the shared folder, §III),
// in pure Go on gonum. It encodes a GBD master problem as a bipartite graph, runs an edge-conditioned
// graph network on it, trains that network by Algorithm 1 from expert master solutions, scores it by
// the paper's Table I metrics, and stores it in a versioned, checksummed policy file. An *Agent is a
// gbd.Policy: the engine's Algorithm 2 calls Propose and screens what it gets.
//
// # Action space
//
// The agent chooses among the assignments of Y_pb = {y ∈ {0,1}^m : K y ≤ b} (§III-A), in the order
// fixed by gbd.EnumerateAdmissible and identified by its signature. A policy file stores that order
// and refuses (CheckFits, Propose) any master whose Y_pb has another signature.
//
// # Graph encoding (§III-B "Input")
//
// For a master with cuts φ^(k)(y) = a_kᵀy + c_k (gbd.Cut) and previous iterate y^prev:
//
//	variable node i   features [1, y^prev_i, 0, 0]                      (one per binary)
//	cut node k        features [0, 0, (−c_k − m_t)/s_t, 1 if feasibility cut else 0]
//	edge i — k        wherever a_k,i ≠ 0, feature (a_k,i − m'_t)/s'_t, in both directions
//
// so a cut node carries the cut's right-hand side (the cut written a_kᵀy ≤ −c_k, or a_kᵀy − μ_B ≤ −c_k)
// and its type flag, exactly as in the paper; pure binary constraints are not nodes, they define the
// action space. Variable and cut nodes share one feature vector so one weight matrix serves both sides.
// The normalisation (m, s) of right-hand sides and (m', s') of coefficients is a mean and standard
// deviation per cut kind t, fitted on the training data (FitNorm) and stored in the policy file:
// optimality cuts carry objective-scale numbers, feasibility cuts violation-scale numbers.
//
// Arch.CutNorm = CutNormMaster (not in the paper, which leaves normalisation open) first rescales each
// master by the symmetries of its argmin: all its optimality cuts by one shift and one positive scale,
// each feasibility cut by its own positive scale, so that a cut node carries where the cut lies
// relative to the others of its master rather than the objective scale of its parameter set.
//
// With the paper's features the network is invariant to a permutation of the binaries (sum pooling
// forgets which node is which), so it tells binaries apart only through the coefficients on their
// edges; on synthesis its commonest error is y1 and y2 swapped. Two options not in the paper give it
// positions: Arch.VarIndex appends a one-hot of the binary's index to the variable nodes' features,
// Arch.CutCoefs the cut's coefficients, in binary order, to the cut nodes' features (a cut node can
// then evaluate itself at any assignment in its first layer). Both are off in the zero Arch.
//
// Presets name the combinations Table I's ablation kept (preset.go): "paper" is the zero Arch with
// Adam, "paper-features" the paper's features with CutNormMaster, PoolSumMax and an 8-unit kernel
// network, and "best" (DefaultPreset, what gbdmpc train uses) adds VarIndex, CutCoefs and AdamW
// weight decay 0.01. docs/experiments.md's Table I gives each one's held-out scores over three seeds. "light" and
// "light-node" (with PerNode) are small networks for the structured agent of 40-binary stations.
//
// # Network (§III-B "Graph Layers" to "Output Layer")
//
// Each edge-conditioned convolution (ECC, Simonovsky & Komodakis 2017) layer maps node states h to
//
//	h'_i = ReLU( b + W_rootᵀ h_i + Σ_{j∈N(i)} Θ(e_ij)ᵀ h_j ),   Θ(e) = Σ_k e_k W_k + B,
//
// Θ being a linear edge network reshaped to an in×out kernel: Spektral's ECCConv default, which the
// paper does not change. Linearity gives Σ_j Θ(e_ij)ᵀ h_j = Σ_k W_kᵀ Σ_j e_ij,k h_j + Bᵀ Σ_j h_j, so no
// per-edge kernel is built: one product H·[W_1 … W_E | B | W_root] per layer, then a sparse sum over
// each node's neighbours. Arch.Kernel > 0 puts a hidden ReLU layer ψ(e) in the kernel network,
// Θ(e) = Σ_k ψ_k(e) W_k + B, still linear in ψ; Arch.Aggr = AggrMean divides each node's neighbour
// sum by its degree (neither is in the paper). Then global sum pooling over all nodes (Arch.Pool =
// PoolSumMax, not in the paper, concatenates the per-channel maximum over nodes, which lets a readout
// take the largest of the cut values a layer computes, as the master's max over optimality cuts does;
// Arch.PoolAll reads out every layer, not only the last), dense layers with ReLU, and a linear output layer:
// |Y_pb| logits ℓ for the proposed and baseline agents, NY outputs passed through a sigmoid for the
// independent-IL agent. Arch.PerNode (not in the paper; per-binary outputs only) runs the dense
// layers once per binary instead, on its variable node's last state beside the readout, with one
// output: the binary's logit. Defaults are the paper's: ECC 64, 64, 64; dense 64, 32. Weights start
// Glorot-uniform (the Keras defaults), the edge network's bias B at zero.
//
// # Training (§III-C, Algorithm 1)
//
// Stage 1 minimises the cross-entropy of the expert index j* under p = softmax(ℓ):
//
//	L_CE^(1) = −log p_{j*}
//
// with Adam (β1 0.9, β2 0.999, ε 1e-8), lr 1e-3, batch 8, 20 epochs. Stage 2 freezes the ECC layers and
// fine-tunes the dense and output layers on the feasibility-adjusted logits
//
//	s_j = Σ_{k∈K_F} max(0, φ_f^(k)(c^(j))),   ℓ̃_j = ℓ_j − ω s_j,   L_CE^(2) = −log softmax(ℓ̃)_{j*}
//
// with lr 1e-4, batch 8, 20 epochs, ω = 0.1. StageConfig.WeightDecay (not in the paper, 0 by default)
// makes either stage AdamW. All s_j of a sample come from one product of Y_pb (as a
// |Y_pb|×NY matrix) with the feasibility cuts' coefficients. Since the frozen layers make each sample's
// pooled embedding constant, stage 2 computes it once per sample and trains only the head on it.
// The independent-IL agent (Agyeman et al. 2025) has the same network with NY outputs, trained in one
// stage on the mean binary cross-entropy against the expert assignment's bits.
//
// The structured agent is for stations whose Y_pb is too large to enumerate (an implicit Y_pb with
// stages, e.g. 40 binaries and 26.9 million assignments): the same NY outputs and stage 1, then a
// stage 2 on the head that adds ω Σ_{k∈K_F} max(0, φ_f^(k)(σ(z)))/‖a_k‖ to the binary cross-entropy,
// the per-binary form of the feasibility-aware stage (the penalty over the feasibility cuts, at the
// expected assignment). It proposes the assignment maximising z·y over Y_pb and the view's
// feasibility cuts, decoded exactly by staged.Decoder, so its proposals are admissible and pass
// Algorithm 2's screen by construction. Its labels are assignments (Sample.Y), the staged master's
// optima (Labeller), and dataset and policy files store such a Y_pb as its pure rows and stages.
//
// Stage 1 spreads each minibatch's samples over GOMAXPROCS workers; each sample's gradient goes to its
// own buffer and the buffers are summed in sample order, so a seed determines the weights bit for bit
// whatever the number of workers.
//
// # Inference
//
// Propose returns, per variant: the baseline's and the proposed agent's logits ℓ = π_θ(G), which is
// the paper's Algorithm 2; the independent agent's σ(z); the structured agent's decoded assignment
// (gbd.Proposal.Assign). Policy files written before this choice was
// made hold proposed agents that proposed ℓ̃ = ℓ − ω s (s from the master's own feasibility cuts, the
// logits stage 2 trains on); they load with Inference() == Adjusted and act as they did. Training no
// longer makes such agents: on synthesis ω·s is about 0.06 (median s_j 0.65 where positive), far
// below the gaps between logits, and both ways differ by at most one decision in 1,429 (Table I
// shows both). Propose validates the view, reuses the agent's buffers and does not allocate once
// warmed up; its result is valid until the next call, and an Agent serves one goroutine at a time.
//
// # Evaluation (Table I)
//
// Evaluate (the agent's own inference) and EvaluateAs (either) score a dataset with the engine's own
// reading of a proposal, gbd.Decide (argmax skipping NaN, or the independent agent's 0.75 / 0.25
// rounding; undecided, outside Y_pb or all-NaN is a miss and infeasible), and its screen,
// gbd.SatisfiesFeasibilityCuts at gbd.FeasTol: exact match (the decision is the expert's label), any
// optimal (the decision is one of the master's optimal solutions, OptimalSet, within TieTol = ε_tol;
// it differs from exact match only on masters with several optimal solutions, which on synthesis are
// exactly the masters without an optimality cut), and feasibility (on samples with at least one
// feasibility cut, the decision passes the screen).
//
// # Files
//
// Datasets (SaveDataset, LoadDataset) are gzip'd JSON Lines: a header
// {"format":"gbdmpc-dataset","v":1,"family","ny","ypb":["01011",…],"signature","samples"} and one line
// per sample {"set","label","prev":[…],"cuts":[{"kind":"optimality"|"feasibility","coef","const","iter","carried"}]}:
// the cuts in the decision log's own form (telemetry.CutRecordOf; a carried cut has iter −1).
//
// A policy file (Save, Load) is a gzip stream of one header line
// {"format":"gbdmpc-policy","v":1,"payload_bytes","sha256"} and the payload JSON it checksums:
// variant, version, family, ny, ypb, ypb_signature, arch (node/edge feature widths, var_index,
// cut_coefs, cut_norm, pool, pool_all, aggr, kernel, ecc, dense, outputs), omega, inference (proposed
// only), norm, params (name, rows, cols, data per tensor, float64 written to round-trip exactly) and
// train (seed, stage settings, sample and set counts, wall time, date, held-out metrics). The fields
// added after the first files (cut_coefs, cut_norm, pool, pool_all, aggr, kernel, inference) are
// optional and default to what those files did. Version is the first 12 hex digits of a SHA-256 over
// what determines the outputs (variant, family, Y_pb, architecture, ω, inference, normalisation,
// weights; an added option enters it only when it differs from the first files' behaviour, so their
// Versions stay valid), so retraining with the same data and seed gives the same Version, and
// metadata never changes it. Save writes a temporary file, syncs and renames it.
package policy
