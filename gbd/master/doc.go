// Package master holds gbd's master-problem back-ends, one package each, side by side behind the
// contract of package gbd (gbd.Master and its capabilities: Cutoff, Budgeted, Interruptible,
// StageTabled, HingeTaker — enum and staged add a problem's hinges, cbc reads cuts' affine part):
//
//	enum    the exact scan of an enumerated Y_pb: per admissible assignment, the running max of
//	        the optimality and of the feasibility cuts, so a solve is one scan (pure Go)
//	staged  an exact branch and bound over the stages (move blocks) of a Y_pb too large to
//	        enumerate, with a solution pool; its Decoder answers a policy's questions over such a
//	        Y_pb (pure Go)
//	cbc     the MILP master solved by CBC (cgo), in worker processes when isolated
//
// One suite (suite_test.go here) runs every back-end against brute force: they must agree. This
// package picks the exact master for a Y_pb (NewExact); backend/ makes any of them by name.
package master
