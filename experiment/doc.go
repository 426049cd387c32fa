// Package experiment runs the paper's protocol on a plant family: expert-data generation from
// classical GBD (every master problem labelled with its exact optimum), the agent-based GBD
// benchmark of Table II, and the plant-size scaling benchmark (Scaling: the pump station's 96-step
// closed loop at 12, 24 and 40 binaries, classical GBD beside an agent, with a table and a
// figure). Training and Table I live in policy/; the commands in cmd/gbdmpc wire them.
package experiment
