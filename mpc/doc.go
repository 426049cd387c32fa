// Package mpc is the receding-horizon layer between a plant family and the GBD engine. A Family
// (implemented in plant/) turns a measurement into a gbd.Problem and a solve into a Plan; the
// Controller runs one control period at a time: build the problem, warm-start from the previous
// plan shifted, solve under the period's deadline, publish the first move, and fall back to the
// shifted plan or the safe action when no solution came back. It knows nothing about MQTT.
//
// # Transcription (the pump station, specs/pumpstation.md)
//
// With tank area A, sample time Δt, horizon N, B blocks of L = N/B steps, b(t) = ⌊t/L⌋, measured
// level h[0] and pump states u0, demand forecast d and price forecast π:
//
//	min  Σ_{t=0}^{N−1} Σ_p π[t]·Δt·(e_p·q[p,t] + f_p·(q[p,t]/q_max,p)³)        energy
//	   + Σ_b Σ_p (c_p·L·Δt·y[p,b] + γ_p·s[p,b])                                running and starts
//	   + w_h·Σ_{t=1}^{N} (h[t] − h_ref)² + w_N·(h[N] − h_ref)²                  tracking, terminal
//	s.t. h[t+1] = h[t] + (Δt/A)·(Σ_p q[p,t] − d[t]),  t = 0..N−1                dynamics
//	     q_min,p·y[p,b(t)] ≤ q[p,t] ≤ q_max,p·y[p,b(t)]                          semi-continuous flow
//	     1 ≤ h[t] ≤ 5,  t = 1..N                                                hard level limits
//	     s[p,1] ≥ y[p,1] − u0[p],  s[p,b] ≥ y[p,b] − y[p,b−1]                   starts
//	     Σ_p y[p,b] ≤ 2,  y[p,b] − y[p,b−1] ≤ y[p,b+1] (b = 2..B−1)               pure binary: K y ≤ b
//	     q ∈ [0, q_max], h ∈ [0, 6], s ∈ [0, 1], y ∈ {0,1}^{3B}
//
// For fixed y the dynamics are affine and every cost term convex (the cube on q/q_max ∈ [0,1]), so
// each subproblem is a convex NLP and GBD's guarantees hold. The variable order, row names and the
// treatment of the level limits in the feasibility problem are in plant/pumpstation's doc. The
// level limits are hard from the first step on; when no plan can hold them, the soft version below
// is solved.
//
// # When the limits cannot be held
//
// A measurement may offer a soft version of its problem (Softener): the same binaries and pure
// rows, hence the same Y_pb, with the limits' violations penalised exactly (L1) instead of
// forbidden, and always feasible. Solve (used by Step and by `gbdmpc solve`) runs, for a deadline
// with R left:
//
//   - the pre-check Unholdable first; when it proves the hard problem infeasible (a certificate,
//     never a guess: the pump station's follows the levels any plan can reach), the soft problem
//     gets all of R and no hard solve runs;
//   - otherwise the hard problem: with all of R at a normal step, so that servable steps lose
//     nothing, and with Options.HardFrac·R (default 1/2) at a step that follows one whose limits
//     could not be held or whose hard solve found no plan, when infeasibility is likely and the soft
//     problem needs time. An incumbent ends it, as before. Infeasible (GBD's proof) sends the soft
//     problem the rest, up to the deadline;
//   - a hard solve that ran out of its share without an incumbent also hands the rest to the soft
//     problem, which relaxes the hard one: a soft plan within the limits is the hard problem's
//     incumbent (its lower bound is valid for the hard problem too), a soft lower bound above the
//     family's bound on the hard optimum proves infeasibility (ProofSoftBound), and anything else
//     is a fallback with "infeasibility not proven" in its reason.
//
// Proving infeasibility by GBD can take many iterations (every assignment needs a feasibility cut
// against it), which is why the cheap certificate comes first: the pump station's pre-check
// catches every capacity shortfall and every measured level out of reach, and GBD is left with
// what only the move blocking makes infeasible (4 iterations in plant/pumpstation's
// TestReachIsACertificate). Halving the hard solve's time at every step would cost every servable
// step half its budget for that rare case; instead a step that the pre-check misses and that GBD
// cannot settle in time falls back once, and the next step shares the time.
//
// A decision from the soft problem is Relaxed (Kind Soft): optimal or gap as its solve went, with
// a Relaxation saying which limit it breaks, by how much at most, from which plan step, how much
// demand goes unserved and how infeasibility was proven. The daemon publishes it as the action's
// "relaxed" object with the status degraded and an alarm; `gbdmpc solve` reports the instance
// infeasible with the soft solution in "relaxed". A family without a Softener (synthesis) is
// solved as before: its infeasible instances stay infeasible, and the controller falls back.
//
// Cuts are carried per kind: one pool for the hard problem and one for the soft problem. The two
// share their rows' names and order but not their meaning, so each solve is offered only the cuts
// of problems of its own kind, aligned as below.
//
// # Move blocking and shifting
//
// A plan holds per-step values (levels, flows, pump states) and the solve's block binaries. One
// control period later the controller needs (a) a fallback in case the new solve fails and (b) a
// first iterate for the new solve:
//
//   - Steps shift by one: the first step is dropped and the last one repeated (ShiftSteps), so the
//     fallback's first move is the old plan's second step.
//   - Binaries shift by a block every L steps (Blocking.ShiftPattern): after k steps, block b of the
//     new horizon takes the old value at its first step, old step b·L + k, and blocks starting past
//     the old horizon repeat the last block. For k = 1..L−1 the pattern is unchanged (the new
//     blocks straddle old ones; their first steps still lie in the same old blocks), and at k = L
//     it moves by one block. The pattern is always computed from the solved binaries and the total
//     shift k, never by composing single shifts.
//   - The shifted pattern is used as Settings.Y0 only when it is in Y_pb (the engine requires an
//     admissible first iterate); otherwise Y0 is the measurement's own guess (mpc.Starter) when
//     admissible, else nil, the engine's default. For the pump station the shifted pattern is
//     always admissible: dropping the first block and repeating the last keeps Σ_p y ≤ 2, and the
//     up-time row for the new block b is the old row for b+1, or reads y_B − y_B ≤ y_B.
//   - The shifted trajectory (flows, levels, implied starts) is Settings.X0; the engine clamps it
//     into each assignment's box.
//
// A plan that has been shifted N−1 times has nothing left to shift. Options.SafeAfter (default 4,
// one block) bounds the consecutive periods on a shifted plan; the next fallback applies the
// family's safe action and drops the plan.
//
// The step publishes the solve's incumbent whenever there is one: optimal, gap (the deadline or
// the iteration cap stopped it), and also when a solver failed after the incumbent was found (the
// incumbent is feasible and the lower bound from valid cuts still holds; the action is gap and its
// reason names the failure). Only a step without an incumbent falls back.
//
// The controller assumes that successive measurements are one control period apart.
//
// # Carried cuts
//
// A cut is valid only for the problem it was made from, and every period's problem differs
// (measured level, pump states, forecasts). The multipliers behind it are not so tied: for the new
// problem and any μ ≥ 0, λ, the Lagrangian minimized over the variable box X is an affine function
// of y below Z(y) (gbd's doc, "Carried cuts"). So the controller keeps, in one gbd.CutPool per
// plant, the multipliers of every cut its solves made (Options.CarryPool, default gbd.EnumPoolSize
// with the enum master and gbd.DefaultPoolSize with the others, the most recent kept), and before
// each solve re-evaluates them for the new
// problem and hands the resulting cuts to the engine (Settings.Cuts), with the shifted plan as first
// iterate. Options.NoCarry turns this off. The re-evaluation may take Options.CarryFrac (default
// 0.25) of the time left before the step's deadline, newest cuts first; the cuts not reached are
// dropped (Decision.Carry.TimedOut), and a step whose deadline has already passed carries none.
//
// The rows of a receding-horizon problem move with the horizon, so the multipliers of a cut made k
// periods ago are first aligned by the family (DualShifter). RowTimes does it for a family that
// says which rule and time each row describes, as the pump station and every model plant do, and
// carries each in two alignments:
//
//   - time-aligned, as the plan is shifted: dyn[t], qmin[p,t], qmax[p,t] take the old rows of step
//     min(t+k, N−1), hmin[t], hmax[t] those of level min(t+k, N), and start[p,b] that of block
//     min(⌊(b·L+k)/L⌋, B−1), the binaries' block rule above; the last step's values are repeated;
//   - as stored, which keeps the old cut's y-coefficients (they do not depend on the measurement)
//     and re-certifies only its constant.
//
// Because any μ ≥ 0 and λ give a valid cut, alignment affects only the strength of the carried
// cuts, never the solve's answer; with both alignments the pump station's closed loop needs about
// a fifth of the iterations of from-scratch solves. A family without a DualShifter has its
// multipliers carried as stored; cuts whose Lagrangian is not separable are not carried.
//
// Most carried cuts are dominated by another (below it at every y) and change nothing. A pooled
// entry all of whose re-evaluations were dominated at Options.CarryEvictIdle consecutive steps
// (default 2) leaves the pool, so each step re-evaluates the cuts that still shape the master
// rather than a day of history.
//
// A controller with no multipliers of its own yet (a plant's first step, and every plant's first
// step after a daemon restarts) may borrow a sibling's (Options.Siblings): the pool of another
// plant of the same family whose problems have the same variables and rows, carried as stored for
// that one step. The same weak-duality argument makes those cuts valid, so borrowing changes how
// fast the cold step certifies, never its answer.
package mpc
