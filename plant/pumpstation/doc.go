// Package pumpstation is the plant family of specs/pumpstation.md: a water tank fed by three on/off
// pumps with minimum flows, serving a forecast demand under time-of-use prices. It is the project's
// reference mixed-integer MPC.
//
// The package holds the family as data: its Config (every number of the spec, DefaultConfig), the
// measurement/instance JSON of specs/interfaces.md with validation (Decode), seeded sampling of
// realistic instances from a daily Profile (Sample), the transcription into a gbd.Problem
// (Problem), and the mpc.Family that the controller and the daemon use (NewFamily). The simulated
// plant that closes the loop lives in plant/sim.
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
// …) give each row's index; Family.ShiftDuals uses them to move cut multipliers along the horizon
// so that the controller can carry cuts from one control step to the next (mpc's doc, "Carried
// cuts").
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
// most max_on pumps. With the solver down for a simulated day it keeps the tank in [2.87, 3.10] m,
// where a fixed "all pumps off" empties it (plant/sim TestSolverDownAllDay). A configured fixed
// safe action (safe_pumps_on/safe_flow_m3h with safe_hold false, or the daemon's safe_action)
// replaces the rule.
//
// # Level limits
//
// Recovery: when the measured level is already outside [1, 5] (after a fault, a run of fallbacks
// or a manual intervention), the limit of step t is relaxed to the best level reachable by then
// (the MaxOn largest pumps at full flow when low, every pump off when high), so the MINLP stays
// feasible and the plan heads back inside instead of leaving the controller on fallbacks while the
// tank runs dry. Inside the limits the rows are exactly the spec's. A 2,000-step MQTT run on a
// loaded machine showed the trap this avoids: missed deadlines led to the safe action (all pumps
// off), the tank drained below what one step can recover, and every later MINLP was infeasible.
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
package pumpstation
