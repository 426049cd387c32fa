// Package enum is gbd's exact master for an enumerated Y_pb (a gbd.Master). Per admissible
// assignment it keeps the running max of the optimality cuts and of the feasibility cuts, updated
// as each cut arrives (one table lookup per 8 binaries and assignment, or one per stage for a
// stage cut), so that a solve is one scan of Y_pb and always exact: tens of µs for the pump
// station. It is mpc's default master. A Y_pb too large to enumerate needs gbd/master/staged or
// gbd/master/cbc; gbd.MasterFits says so before a solve.
package enum
