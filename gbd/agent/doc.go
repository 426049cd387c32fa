// Package agent holds the built-in policies of agent-based GBD (gbd.Policy, Algorithm 2): real
// policies, selectable as builtin:NAME wherever a policy file's path can stand, that exercise the
// algorithm's guarantee: whatever a policy proposes, agent-based GBD reaches the classical
// optimum. The engine's side of Algorithm 2 (what a policy sees, how its proposal becomes ŷ, the
// screen and the comparison) is package gbd; the learned policies are package policy.
package agent
