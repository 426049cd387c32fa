// Package sim is the simulated pump station used as a testbed: the plant of specs/pumpstation.md
// with plant–model mismatch and demand noise, and a closed loop that runs it under the mpc
// controller in one process.
//
// # Plant
//
// The simulator integrates the spec's dynamics h ← h + (Δt/A)·(Σ_p q_act,p − d_act) once per control
// period, where
//
//   - q_act,p = q_cmd,p·(1 + δ_p) for a running pump, with δ_p fixed per run (Config.Mismatch, or drawn
//     uniformly in ±Config.MismatchMax, default 3 %), and q_cmd,p kept within the pump's
//     [q_min, q_max] as a real pump would be;
//   - d_act = forecast + e, with e an AR(1) process e[k] = ρ·e[k−1] + √(1−ρ²)·σ·w[k] whose
//     stationary standard deviation is σ (default σ = 8 m³/h, ρ = 0.8), never below zero demand.
//
// The level is clamped physically to [0, 6] m (overflow and unserved volumes are counted), and a
// period that ends outside the operating limits [1, 5] m is recorded as a violation. Volume is
// conserved: Σ inflow − Σ drawn − overflow + unserved = A·Δh. Every measurement carries the level,
// the pump states and N-step demand and price forecasts read off the daily Profile from the current
// time of day, plus "seq" and "ts_ms" (plant time), exactly as the daemon receives it over MQTT.
// Everything is seeded (Config.Seed): the same Config gives the same run.
//
// # Closed loop
//
// RunClosedLoop builds the family and an mpc.Controller, and for each period encodes the
// measurement as JSON, decodes it through the family (the daemon's path), steps the controller
// under a wall-clock deadline (LoopOptions.StepBudget), decodes the published action and applies it
// to the plant. With LoopOptions.OutDir it writes
//
//	steps.csv      one row per period: time, level, demand (forecast and actual), price, pump
//	               states, commanded and delivered flows, cost, status, objective, LBD, UBD, gap,
//	               iterations, solve seconds, agent statistics, fallback reason
//	summary.json   the Summary with "v":1
//	summary.txt    the same for a person
//	figure.png     stacked panels over the time of day: level with its limits, pump states, flows
//	               against demand, price, solve time and certified gap (fallbacks marked)
//
// The daemon's `gbdmpc simulate` command is a thin wrapper around RunClosedLoop.
package sim
