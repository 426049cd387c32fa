// Package staged is gbd's exact master for a Y_pb too large to enumerate (gbd.ImplicitAdmissible
// with Stages): a branch and bound over the stages (the move blocks of a receding-horizon plan),
// last to first, with DP completion bounds over gbd.StageModel, and a solution pool that answers
// most GBD iterations by updating it. Told the incumbent (gbd.Cutoff: the engine passes UBD − ε), it
// searches and collects the pool up to there in one pass when it fits, which answers the rest of
// the solve, and once that pool is spent it answers gbd.MasterAboveCutoff, which certifies the
// incumbent. Master's doc describes the search.
//
// Decoder answers a policy's questions over such a Y_pb exactly, with a Master that follows the
// views' cuts: the best-scored assignment the feasibility cuts allow (the structured agent's
// decoder), the best of its K best-scored by the optimality cuts (Settings.Candidates), and the
// master's optimum (builtin:oracle).
package staged
