// Package solver is a plant's solver specification: what a user chooses for its GBD solves (the
// master and NLP back-ends by name, ε, ε_tol, T_min, T_max and the agent's settings), in one
// type, Spec. The daemon's config embeds it, so its fields are a plant's config keys; every
// command that runs GBD registers its flags from it (Spec.RegisterFlags) and reads a configured
// plant's spec under them (Spec.Over); Spec.Problems is its one validation and Spec.Settings the
// one place it becomes gbd.Settings.
//
// The back-ends' names come from one table each here (MasterNames, NLPNames); package backend
// makes the back-ends they name. solver itself is pure Go, so that configs (and what imports it)
// stays free of the C solvers.
package solver
