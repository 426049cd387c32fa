// Package experiment runs the paper's protocol on a plant family: expert-data generation from
// classical GBD (every master problem labelled with its exact optimum), and the agent-based GBD
// benchmark of Table II. Training and Table I live in policy/; the commands in cmd/gbdmpc wire them.
package experiment
