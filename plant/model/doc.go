// Package model is the plant family whose model is read from a file: a mixed-integer MPC written
// as data, with no Go code (issue #37). A model names its continuous states (linear dynamics,
// physical range, hard and soft limits), continuous inputs (ranges; gated by an on/off unit or
// not), on/off units (running and start costs, minimum up and down times, must-run), pure binary
// rules (at most k units on, exclusive pairs), forecasts carried by every measurement, and convex
// separable costs from the atom library, optionally multiplied by a forecast, and linear constraints
// among the inputs and forecasts of a step (a power balance).
//
// # Model files
//
// YAML, read with yaml.v3's node API so that every error names its line (Error). A daemon config
// names a model file (plants[].model: FILE) or writes the model inline (plants[].model: {...});
// an inline model's errors name the config file's lines (ParseNode).
//
//	name: pumpstation
//	dt: 0.25                 # length of a step, in the time unit run costs are given per
//	horizon: 16              # N steps
//	blocks: 4                # B move blocks of the units' binaries (default N)
//	forecasts:
//	  - {name: demand_m3h, range: [0, 1000]}
//	states:
//	  - name: level_m
//	    range: [0, 6]        # physical: the box of every x[t] and of a measured value
//	    min: 1               # hard limits for t = 1..N (optional)
//	    max: 5
//	    # soft_min, soft_max and soft_penalty: limits priced per unit of violation and step
//	    next: {level_m: 1, q1: 0.005, demand_m3h: -0.005}   # x[t+1] = Σ coef·(state, input, forecast)[t] + const
//	inputs:
//	  - {name: q1, range: [0, 60], unit: p1, on_min: 20}  # 0 while p1 is off, in [20, 60] while on
//	units:
//	  - {name: p1, run_cost: 0.2, start_cost: 1, min_up: 2}
//	costs:   # Σ_t weight·times[t]·atom(scale·(var[t] − ref))
//	  - {var: q1, atom: power, p: 3, scale: 0.016666666666666666, weight: 0.75, times: price}
//	  - {var: level_m, atom: quadratic, ref: 3, weight: 5, steps: terminal}
//	rules:
//	  - {at_most: 2, units: [p1, p2, p3]}
//	  - {exclusive: [charge, discharge]}
//	constraints:   # linear rows among the inputs and forecasts of every step
//	  - {name: balance, sum: {import: 1, export: -1, pv: 1, load: -1}, eq: 0}   # or le, ge
//	safe_hold: {state: level_m, ref: 3}   # the safe action from the measurement (safe.go)
//
// Atoms: linear, quadratic, abs, power (p ≥ 1, its argument ≥ 0 over the variable's range) and pwl
// (convex piecewise linear through points [[argument, value], ...], extended linearly beyond the
// ends). An input's cost covers t = 0..N−1 with the forecast of step t, a state's t = 1..N (or N
// alone with steps: terminal) with the forecast of step t−1. Every model is checked when loaded:
// names (unique, defined, not reserved), dimensions, convexity (every non-linear atom's multiplier
// weight·forecast must be ≥ 0 over the forecast's range), gating (a gated input's range starts at 0),
// and limits that leave nothing for x[1] from any measurement.
//
// # Transcription
//
// Variables, in this order: inputs u_i[t] (input-major, t = 0..N−1), states x_s[t] (t = 1..N), start
// indicators s_u[b] ∈ [0, 1] of units with a start cost, soft-limit violations, and one epigraph
// variable per step of every abs or pwl cost. Binaries y_u[b] unit-major at u·B + b. Rows:
//
//	Eq   x_s[t+1] − Σ next·(x, u, d)[t] − const = 0              x[0] measured
//	     equality constraints, per constraint and step
//	Ineq on_min_i·y_u[b(t)] − u_i[t] ≤ 0,  u_i[t] − max_i·y_u[b(t)] ≤ 0   (one input, one binary)
//	     min_s − x_s[t] ≤ 0,  x_s[t] − max_s ≤ 0
//	     y_u[0] − s_u[0] ≤ on0_u,  y_u[b] − y_u[b−1] − s_u[b] ≤ 0
//	     soft limits, the epigraph pieces, then le/ge constraints
//	Pure at_most and exclusive per block, must-run, and for b ≥ 1 (a switch inside the horizon):
//	     y[b] − y[b−1] − y[b+j] ≤ 0 (j < min_up),  y[b−1] − y[b] + y[b+j] ≤ 1 (j < min_down)
//
// Running costs are run_cost·dt per step on, start costs start_cost per start. Y_pb is the same
// at every step; its stages are the move blocks when every rule spans at most three consecutive
// blocks (min_up and min_down ≤ 2), which the staged master needs.
//
// # Measurements and actions
//
// A measurement (and a `gbdmpc solve` instance) is one JSON object with "v": 1, every state's
// measured value, every unit's current state (0 or 1) and every forecast (N values), each by its
// name (Model.Decode). The action's "apply" holds every input and every unit by name; "plan" holds
// the horizon by name.
//
// # When the limits cannot be held
//
// The soft problem (soft.go, mpc.Softener) prices the violation of every hard limit exactly (L1,
// a penalty above what any plan within the limits can cost); the physical ranges stay hard.
// Unholdable proves infeasibility by interval reachability. The controller then applies the
// soft optimum and marks the action relaxed, naming the limit ("min_<state>" or "max_<state>").
//
// Plans read back (DecodePlan, mpc.PlanDecoder) for a standby daemon taking over; Alternates hands
// a unit's blocks to a substitute (mpc.Alternator). The safe action is fixed (safe_on, safe) unless
// the model has safe_hold, which computes it from the measurement by the pump station's rule
// (mpc.HoldSet, mpc.SafeActioner; safe.go). Sample draws forecasts uniformly within their typical
// range, not as a plant's days.
//
// # Closed loop
//
// Sim is the model's simulated plant (its own dynamics, forecasts that come true up to AR(1)
// noise); RunLoop closes the loop under mpc.Controller. Each step's cost (StepCost) is the model's
// objective at what happened: every cost term but the terminal ones, running, start and soft-limit
// costs. WriteFigure draws a day for a plant engineer and takes each axis's unit from the suffix
// the model's names end in (_kw: kW, _kwh: kWh, _m3h: m³/h, _eur_kwh: €/kWh, _m: m, …; a name
// without one is drawn without a unit); it reads dt in hours.
package model
