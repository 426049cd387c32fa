// Package pumpstation is the plant family of specs/pumpstation.md: a water tank fed by three on/off
// pumps with minimum flows, serving a forecast demand under time-of-use prices. It is the project's
// reference mixed-integer MPC.
//
// The package holds the family as data: its Config (every number of the spec, DefaultConfig), the
// measurement/instance JSON of specs/interfaces.md with validation (Decode), seeded sampling of
// realistic instances from a daily Profile (Sample), the transcription into a gbd.Problem
// (Problem) with the hard level limits, its soft-constrained version for forecasts no plan can
// serve within them (SoftProblem, with the pre-check Reach), and the mpc.Family that the
// controller and the daemon use (NewFamily). The simulated plant that closes the loop lives in
// plant/sim.
//
// # Transcription
//
// Variables (0-based pumps p and blocks b in code, 1-based in the spec and in variable names):
//
//	x = ( q[p,t]  p-major, t = 0..N−1    flow of pump p during step t, m³/h, box [0, q_max,p]
//	      h[t]    t = 1..N               level at the end of step t−1, m,    box [0, 6] (physical)
//	      s[p,b]  p-major                start indicator,                    box [0, 1] )
//	y[p,b] at p·B + b                    pump p runs in block b
//
// with b(t) = ⌊t/(N/B)⌋. Rows, all as expr ≤ 0 or expr = 0, in this order:
//
//	Eq   dyn[t]      h[t+1] − h[t] − (Δt/A)·(Σ_p q[p,t] − d[t]) = 0            h[0] = measured level
//	Ineq qmin[p,t]   q_min,p·y[p,b(t)] − q[p,t] ≤ 0
//	     qmax[p,t]   q[p,t] − q_max,p·y[p,b(t)] ≤ 0
//	     hmin[t]     1 − h[t] ≤ 0
//	     hmax[t]     h[t] − 5 ≤ 0
//	     start[p,1]  y[p,1] − u0[p] − s[p,1] ≤ 0
//	     start[p,b]  y[p,b] − y[p,b−1] − s[p,b] ≤ 0                            b = 2..B
//	Pure             Σ_p y[p,b] ≤ 2                                              every b
//	                 y[p,b] − y[p,b−1] − y[p,b+1] ≤ 0                            b = 2..B−1
//
//	cost = Σ_t Σ_p π[t]·Δt·(e_p·q[p,t] + f_p·(q[p,t]/q_max,p)³)     (cube atom on q/q_max ∈ [0, 1])
//	     + Σ_b Σ_p (c_p·(N/B)·Δt·y[p,b] + γ_p·s[p,b])
//	     + w_h·Σ_{t=1..N} (h[t] − h_ref)² + w_N·(h[N] − h_ref)²
//
// For the spec's numbers NX = 76, NY = 12 and |Y_pb| = 889. Config's row helpers (QMinRow, DynRow,
// …) give each row's index and Config.RowTimes what time each row describes; Family.ShiftDuals
// moves cut multipliers along the horizon by those times (mpc.RowTimes, the shifting every model
// plant uses too) so that the controller can carry cuts from one control step to the next (mpc's
// doc, "Carried cuts").
//
// configs/models/pumpstation.yaml writes this problem as a model file (plant/model): the same
// variables and rows in the same order, the same optima and closed-loop day (plant/model's
// TestPumpStationMatchesBuiltin). The family stays Go code for what a model does not express:
// the spec's fixed-array payloads and the soft problem's unserved demand below.
//
// Every inequality involves a single x variable, so for fixed y the engine turns it into a bound
// (gbd/nlp.go): a switched-off pump's flows are fixed at 0 and leave the NLP, and S(y) is 16
// dynamics equalities over box constraints.
//
// # Safe action
//
// When the controller has no plan left (mpc's SafeAfter fallbacks in a row, or none ever made),
// the family's safe action applies. By default (Config.SafeHold) it is a level-holding rule
// computed from the measurement (Family.SafeActionFor): the inflow that brings the level to
// level_ref in one step given the first step's demand, served by the closest-fitting set of at
// most max_on pumps (mpc.HoldSet, the rule a model's safe_hold uses). With the solver down for a simulated day it keeps the tank in [2.87, 3.10] m,
// where a fixed "all pumps off" empties it (plant/sim TestSolverDownAllDay). A configured fixed
// safe action (safe_pumps_on/safe_flow_m3h with safe_hold false, or the daemon's safe_action)
// replaces the rule.
//
// # Level limits
//
// The operating limits 1 ≤ h[t] ≤ 5 are hard rows for t = 1..N, whatever the measured level: the
// plan must hold them from the end of the first step on. When no plan can (demand beyond what the
// MaxOn largest pumps deliver, a measured level outside the limits that one step cannot bring
// back, or the move blocking), the MINLP is infeasible and reported so; the controller then solves
// the soft problem below (doc section "When the limits cannot be held"). There is no silent
// loosening of the limits: before, they were relaxed to whatever the forecast allowed, and a
// 300 m³/h shortfall was solved "optimal" with a plan running the level to −1.8 m.
//
// The hard limits 1 ≤ h ≤ 5 are rows, not the box; the box of h is the tank's physical range. The
// engine converts the rows to the same bounds, so S(y) is unchanged, but the rows carry their own
// multipliers into the cuts and the box stays the honest physical one that later work relies on.
// In the feasibility problem F(y) the level bounds therefore stay hard and the slacks sit on the
// dynamics: F(y) is the least total "virtual water" (in metres of level) that would have to be
// added to or taken from the tank to keep every level within limits. F(y) is always solvable,
// because the level interval and every flow interval [q_min·y, q_max·y] are non-empty. Its dual
// prices the flow bounds: wherever more inflow at step t would reduce the deficit, the multiplier
// of qmax[p,t] is (Δt/A)·|λ_t| (λ_t the dynamics multiplier, which carries back through every step
// whose level is not at a limit), and likewise qmin for an excess. The feasibility cut
//
//	φ_f(y) = F(ȳ) − Σ_{p,t} μ_{p,t}·q_max,p·(y[p,b(t)] − ȳ[p,b(t)]) + (qmin terms)
//
// thus tells the master how much each pump-block would cut the violation instead of excluding ȳ
// alone (TestNLPDerivatives checks that it credits running pumps). Putting the slack on the level
// itself would need the limits as multi-variable rows (the engine turns every single-variable row
// into a bound), which would only restate the dynamics.
//
// # When the limits cannot be held
//
// The measurement is an mpc.Softener. Its pre-check (Reach) follows the interval of levels
// reachable within [1, 5] m with any total flow in [0, Q] per step, Q the MaxOn largest pumps at
// full flow, which bounds every admissible plan; an empty interval proves the hard problem
// infeasible (exact where it claims: it ignores minimum flows and blocks, so it can only miss an
// infeasibility, which GBD then proves). Its soft problem (SoftProblem) has the hard problem's
// binaries, pure rows (hence Y_pb) and rows, in the same order, so the row helpers and ShiftDuals
// serve both; after the hard layout come three penalty variables per step, in €:
//
//	w⁻[t] = ρ·v⁻[t]  t = 1..N    v⁻ the violation of the lower limit, m    box [0, ρ·(LevelMin − PhysMin)]
//	w⁺[t] = ρ·v⁺[t]  t = 1..N    v⁺ the violation of the upper limit, m    box [0, ρ·(PhysMax − LevelMax)]
//	w_u[t] = σ_t·(Δt/A)·u[t]    u[t] ∈ [0, d[t]] m³/h, demand left unserved in step t
//
//	dyn[t]   h[t+1] − h[t] − (Δt/A)·(Σ_p q[p,t] − d[t]) − w_u[t]/σ_t = 0
//	hmin[t]  LevelMin − h[t] − w⁻[t]/ρ ≤ 0
//	hmax[t]  h[t] − LevelMax − w⁺[t]/ρ ≤ 0
//	cost + Σ_t (w⁻[t] + w⁺[t] + w_u[t])
//
// an exact L1 penalty on each step's violation, below and above. The level keeps its physical box
// [PhysMin, PhysMax]: the plan never predicts a level below the tank's floor or above its overflow
// height. All pumps off is always feasible (the tank serves what it holds, u takes the rest), so
// the soft problem always has a plan. It is a convex MINLP of the same binaries: GBD, the carried
// cuts and the agent apply unchanged. Priced in metres, a penalty variable resting on its lower
// bound would be worth ρ times the NLP's bound tolerance (Ipopt relaxes bounds by 1e-8, about
// 1e-3 € each at ρ ≈ 1e5), enough to put the soft optimum of a servable instance measurably below
// the hard one; priced in € it is worth 1e-8 €.
//
// # Penalty bound
//
// Every cost term is ≥ 0, and every plan within the hard limits costs at most
//
//	C = Σ_t π[t]·Δt·Σ_p P_p(q_max,p) + Σ_p (c_p·N·Δt + γ_p·B) + (w_h·N + w_N)·D²,
//	D = max(h_ref − LevelMin, LevelMax − h_ref)
//
// (Penalties.Bound; 100–120 € for the spec's station and prices). The level penalty is ρ = (C + 1 €)/SoftTol
// with SoftTol = 1 mm, so ρ ≈ 1e5 €/m. Then:
//
//   - Across assignments: when some plan holds the limits, the hard optimum Z* ≤ C is a point of the
//     soft problem without penalty, so the soft optimum x_s has f(x_s) + ρ·V(x_s) + Σ w_u ≤ C, and
//     its total violation V (metres summed over the steps) is below SoftTol. The soft problem can
//     prefer a plan to every plan within the limits only if that plan breaks them by less than a
//     millimetre-step in all; if its optimum breaks none, it is the hard optimum. No finite penalty
//     promises more for a MINLP: an assignment that misses a limit by ε can be cheaper than every
//     servable one by a pump start, whatever ε. In operation the controller solves the soft problem
//     only once the hard one is proven infeasible, so a plan within the limits wins whenever one
//     exists; TestSoftEqualsHard checks on servable instances that the two optima agree anyway.
//   - Per assignment: for y whose S(y) holds the limits, the soft S(y) has the same optimum as long
//     as ρ exceeds the level rows' multipliers (the exact-penalty theorem for convex programs). They
//     price a metre of level at one step, about what it costs to pump it or to miss the reference:
//     10.3 €/m at an active limit in TestSoftEqualsHard, against ρ ≈ 1e5.
//   - A soft lower bound above C proves the hard problem infeasible (mpc.ProofSoftBound).
//
// # Unserved demand
//
// The price of unserved demand, per metre of level in step t (t = 0..N−1), is
//
//	σ_t = 2·Σ_{j=t+1..N} (ρ + g_j),  g_j = 2·w_h·D' (+ 2·w_N·D' for j = N),
//	D' = max(h_ref − PhysMin, PhysMax − h_ref),
//
// g_j bounding |∂cost/∂h[j]| over the tank. Moving δ of unserved demand from step t to a later step
// r (or serving it, r = N) lowers h[t+1..r] by δ and costs at most Σ_{j=t+1..r} (ρ + g_j)·δ, while
// it saves (σ_t − σ_r)·δ, twice that; the move is possible whenever h[t+1] is above the floor. So
// at the optimum demand goes unserved only in a step that ends with the tank empty: the model is the
// physical tank, which serves what it holds, and σ_t ≥ 2ρ prices unserved demand above any level
// violation (TestPlansArePhysical checks it on random forecasts).
//
// Relaxation reads a soft solution: the violations of the planned levels (their largest, its limit
// and plan step, the first violated plan step) and the unserved volume in m³, anything below 1e-6
// m of level counting as solver tolerance. Plans of a soft solve carry the unserved demand per step
// ("unserved_m3h" in the plan's steps).
//
// # Sizes
//
// Every number of the station is configuration: the pump list, MaxOn, Blocks and Horizon set the
// binaries, NP·Blocks. SizedConfig gives the spec's reference stations of 12, 24 and 40 binaries
// (ExtraPumps are pumps 4 and 5) and a 60-binary one beyond its table (5 pumps × 12 blocks of 2
// steps), CountAdmissible counts their Y_pb without listing it (889, 119,713, 26,877,816 and
// 66,516,379,291). Admissible enumerates Y_pb up to MaxEnumerate assignments and returns
// it implicit beyond (gbd.ImplicitAdmissible): the rows K y ≤ b, solved by the cbc master.
package pumpstation
