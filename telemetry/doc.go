// Package telemetry records what the controller decided, so that the agent proposing GBD master
// solutions can be retrained offline from what the plant actually saw. It depends on the standard
// library and gbd's types alone (no logging or metrics library, no cgo), so that the offline tools
// that read the log build anywhere: the log reports its own trouble to a Logger it is given, and
// exposes its counters for the daemon to export. MasterRecordOf and MasterRecord.GBDCuts are the
// one codec between gbd's master problems and their logged form (codec.go). Nothing here is
// global.
//
// # The decision log
//
// The daemon writes one record per GBD master problem and one per solve. A DecisionLog appends them
// as JSON Lines to segment files decisions-<seq>.jsonl (seq zero-padded to 8 digits) in one
// directory; rotated segments may be gzipped to decisions-<seq>.jsonl.gz. A Reader streams them back
// in order, and ReadAll with a Filter selects a time window and plants for replay.
//
// The log must never block the solver, never lose a complete record it has written, and never crash
// on a bad file:
//
//   - Write only enqueues into a bounded queue; when the queue is full the record is dropped and
//     counted (Dropped), and Write returns false. One goroutine owned by the DecisionLog encodes and
//     writes records.
//   - I/O errors (disk full, directory gone or unwritable) are counted (WriteErrors), turn Healthy
//     false and are kept in LastError; the record is lost, and the next record retries with a new
//     segment. Nothing panics.
//   - A segment that is no longer the file at its path (its directory or the file removed or
//     replaced, or the file truncated underneath) is noticed after the next write, by comparing the
//     open file with the path (fstat and stat): a write error, and the record is written again to
//     a new segment, the directory recreated if need be. Records counts only records in the file
//     at their segment's path.
//   - Open repairs a crash's leftovers (below); the Reader skips a torn tail and reports anything
//     else with its file and line.
//
// # Record schema, version 1
//
// Every line is one JSON object with "v":1 and snake_case keys (see Record):
//
//	{"v":1, "type":"master"|"solve", "ts_ms":<unix ms>, "plant":<id>,
//	 "family":"synthesis"|"pumpstation", "solve_id":<groups one solve's records>,
//	 "step":<measurement seq>, "policy_version":<agent version>, "problem":"soft" (absent: hard),
//	 "master":{...} | "solve":{...}}
//
// "problem":"soft" marks the masters and the solve of a soft-constrained problem, solved when a
// plant's hard limits cannot be held (mpc's doc, "When the limits cannot be held"). Such a solve has
// its own solve id (the step's with "-soft"); the logged instance rebuilds the hard problem, so
// replay leaves these records out. The soft solve record carries "relaxed" {"limit","bound",
// "max_violation","first_step","worst_step","unserved","proof"}, as the action's "relaxed" object.
//
// A master record holds what rebuilds the master problem M at iteration k — "ny", the admissible set
// Y_pb by "ypb_signature" and "ypb_count", every cut {"kind","coef","const","iter","carried"}, the
// previous iterate "prev" = y^k and the plant family's "instance" — and what was decided on it: the
// agent's "proposal" {"index","y","probs","logits","outcome"}, the master solver's "master_status",
// "master_y", "master_mu" and "master_bound", the bounds "lbd" and "ubd", the times "tk_seconds" and
// "master_seconds", and "chosen" = y^{k+1}. A solve record holds the solve's "status", "y",
// "objective", bounds, iteration count, times, "agent" counts, "instance" and "message".
//
// Bounds and other values that can be infinite are Num: ±Inf are written "+Inf" and "-Inf", NaN
// null, because GBD starts with LBD = −Inf. Cut coefficients must be finite. The writer refuses
// (counts in Rejected) any record that fails Record.Validate, so the reader accepts everything the
// writer wrote. A reader refuses records of any other version with a *VersionError.
//
// The engine only appends cuts within a solve, so on the line a master record is written as a
// continuation of its solve's previous master record in the same segment: "cuts_from": n says its
// first n cuts are that record's, and "cuts" holds the rest (schema version 2; chain.go). A solve of
// K iterations then logs O(K) cuts instead of O(K²) (BenchmarkChainedLog: a 200-iteration solve of
// 40 binaries, 0.37 MB instead of 17 MB). Every record a Reader returns is whole; the records of a
// chain share their cuts' storage. A segment reads alone: the first record of a solve in a segment,
// and the first after a failed write, is written whole. The reader still reads version 1 logs.
//
// # Crash safety
//
// Each record is encoded to one '\n'-terminated line and handed to the kernel with a single write
// call on a file opened for appending; there is no user-space buffer. A line without its '\n' is
// therefore the one record a crash interrupted, and only the last line of a segment can be one.
//
// On Open, if the newest segment does not end with a complete line holding a JSON object, the whole
// segment is first copied to <name>.torn-<unixms> (fsynced), then cut back to the end of its last
// complete record, a warning is logged, and writing continues in it. Older segments are left as
// they are. A failed write is cut off the segment at once and the writer moves to a new segment, so
// a torn line is only ever a segment's last. The Reader skips a torn last line of any segment and
// counts it in Torn; a gzipped segment cut short yields its complete records and counts as torn.
//
// Compression writes decisions-<seq>.jsonl.gz.tmp, fsyncs it, renames it to .jsonl.gz, fsyncs the
// directory and only then removes the .jsonl, so a crash at any point leaves at least one complete
// copy; Open removes a leftover .tmp and a .jsonl whose .gz exists. Retention (MaxSegments) deletes
// the oldest segments after a rotation; it never deletes .torn-* copies, which are few and are
// evidence.
//
// # Fsync policy and what survives
//
// Records still in the queue when the process dies are lost under every policy: at most QueueSize,
// counted nowhere because the counters die with the process. A record the writer has written:
//
//   - survives a crash of the process (panic, SIGKILL, OOM kill) under every policy, because it is
//     in the kernel's page cache once the write call returns;
//   - survives a crash of the machine (power loss, kernel panic) as follows.
//
// FsyncAlways fsyncs after every record, before taking the next: every written record survives,
// and the only damage is a torn last line, which Open repairs.
//
// FsyncInterval (the default) fsyncs when a record is written FsyncEvery (1s) or more after the last
// fsync, when FsyncEvery passes with unsynced records and no new one, and on rotation, Sync and
// Close: the records of about the last FsyncEvery may be lost. Because the file system may have
// written some of the unsynced blocks and not others, that unsynced tail may come back with garbage
// or zeros; Open cuts garbage at the very end, and a garbage line before a surviving record is
// reported by the Reader as a *CorruptError (read with SkipCorrupt to recover the rest).
//
// FsyncNever never fsyncs, not even on rotation or Close: what survives a machine crash is whatever
// the kernel had written back (on Linux, typically data older than about 30s), with the same
// possible garbage.
//
// New segments, renames and removals are made durable by fsyncing the directory, except under
// FsyncNever. Sync(ctx) writes and fsyncs everything enqueued before it under any policy.
//
// # Metrics
//
// Records, Dropped, WriteErrors, Rejected, Bytes, Rotated, Queued and Healthy are the counters the
// daemon exports (controller: gbdmpc_decisionlog_{records,dropped,write_errors,rejected,bytes,
// segments_rotated}_total and the gauges gbdmpc_decisionlog_queue_records and
// gbdmpc_decisionlog_healthy).
package telemetry
