// Package controller is the daemon behind `gbdmpc serve`: it closes each configured plant's loop over
// MQTT under a per-step wall-clock deadline. It only serves: the payloads are package wire's, and
// what drives the daemon from outside (the MQTT testbed, soak and load runs) is package testbed.
//
// # Actors
//
// Run starts a set of actors that all stop when one stops (prometheus's run groups):
//
//   - one plant loop per plant (plant.go). Its goroutine owns the plant's control core (core.go)
//     and the mpc controller, and selects over its two lanes of events (events.go), policy updates
//     and a heartbeat ticker, in the manner of etcd's raft node. The core holds every rule — the
//     step's deadline and budget, pass-over and cut-short, withholding a late action, the HA
//     election's consequences, the status and its alarm — and does no I/O: it takes each event with
//     the time and returns what to do (publish, count, log, record, wait for a core, start a
//     solve), which the loop carries out. Nothing else touches that state; what others may read
//     of it (readiness, the status to republish) the loop shows as one immutable view.
//   - the plant's MQTT session (session.go), one connection per plant, because MQTT gives one Last
//     Will per connection and every plant's status topic must be a Last Will. Each connection is
//     its own paho client, made anew after a loss, so nothing published on a lost connection is
//     ever re-sent on the next one. The callbacks take no lock and touch no plant state: the
//     message callback judges each measurement on arrival (gate.go, below) and puts only valid
//     ones in the plant's bounded measurement lane (when full the oldest valid one is dropped and
//     counted), so a solve never stalls the MQTT client and junk never displaces a valid
//     measurement; status messages, peer actions and connection changes go, numbered in arrival
//     order with the measurements, into a control lane that never drops, and the loop takes both
//     in that order. A small goroutine publishes the callback's error messages, since paho must
//     not publish from its callback.
//   - the HTTP server (/metrics, /livez, /readyz), the systemd watchdog, the reload handler and the
//     readiness notifier.
//
// The embedded broker (broker.go, mochi-mqtt) and the decision log (telemetry) are opened before the
// actors start and closed after they stop, so every plant can still publish "offline" on the way out.
//
// # Judged on arrival
//
// Every message on the measurement topic is judged in the session's callback the moment it
// arrives (gate.go): its size against max_payload_bytes before any of it is parsed, one pass over
// the bytes for the envelope ("v" = 1, integer "seq" and "ts_ms", no number that overflows and no
// string spelling NaN or Infinity anywhere; wire.DecodeEnvelope), seq greater than the last accepted one, ts_ms
// within max_age of the daemon's clock (both ways, compared as instants so that no int64 overflows)
// and young enough that its action can be solved and published before it expires (expiry.go), then
// the family's decoder — the one decode of the payload — for its fields and ranges. A rejection counts
// gbdmpc_controller_rejected_total{reason} and gets one message on <prefix>/<plant>/error, rate
// limited per plant by a token bucket (error_burst at once, error_rate per second): a suppressed one
// counts gbdmpc_controller_errors_suppressed_total, and the next error message carries how many
// were suppressed before it ("suppressed"). The gate keeps the last seq and the bucket without a
// lock: only the session's callback touches them, and paho runs it on one goroutine per
// connection, one connection after the other. An HA standby judges alike and keeps the seq, but
// publishes no errors.
//
// # One control step
//
// The loop takes the oldest valid measurement from its lane, after every control event that arrived
// before it. Its deadline is the earlier of the receipt time plus the configured deadline and its
// action's expiry less deadline_reserve (expiry.go); if that (less deadline_reserve) has passed
// while it waited, behind its own loop's steps or for one of the GOMAXPROCS solve slots the loops
// share (slots.go), it is not solved. Otherwise mpc's Step runs (recording every master problem through the gbd.Recorder
// adapter of recorder.go), and the action is published (QoS 1, not retained) with the daemon's own
// per-plant action seq, expiring one period after the measurement's ts_ms. An action is never
// published after its deadline, nor at or after its expiry: a step that overran is withheld, counted in
// gbdmpc_controller_deadline_misses_total and reported on the error topic (reason "deadline"); the
// plant keeps its last valid action, as it would with none. A fallback turns the retained status to
// degraded; the next optimal or gap solve turns it back online.
//
// # What a plant does with an action
//
// Apply it only if it is unexpired (the plant's clock ≤ expires_ms, which is the measurement's ts_ms
// plus the period, so a late delivery cannot make it look fresh), answers the latest measurement the
// plant sent (measurement_seq), and carries an epoch not lower than the highest the plant has seen
// (HA; absent, 0, without HA). Otherwise keep the last applied one. The MQTT testbed (package testbed)
// follows this rule.
//
// # Alarms
//
// A fault that does not stop control but loses something is raised as "alarm" in the plant's
// retained status (and gbdmpc_controller_alarm{plant} = 1) while the state stays online or degraded:
// today the decision log failing to write (until a write succeeds again) or dropping records (for
// a minute after the last drop). Each loop checks on its ticker and after every step.
//
// # Relaxed actions
//
// When the plant's hard limits cannot be held over the horizon, mpc's Step returns the soft
// problem's optimum with a Relaxation (mpc's doc, "When the limits cannot be held"). The action
// carries it as "relaxed" (which limit, the largest predicted violation, the first and worst plan
// step, the unserved demand, how infeasibility was proven), the retained status turns degraded with
// the alarm "hard limits cannot be held: <shortfall>" (joined with any decision-log alarm), and
// gbdmpc_controller_relaxed_steps_total{plant} counts the step. The first step that is not relaxed
// clears the alarm and, unless it is a fallback, turns the status back online. The decision
// recorder tags the soft solve's records (telemetry's "problem":"soft", its own solve id).
//
// # Active/standby
//
// With configs.HA (ha.node), daemons configured for the same plants elect, per plant, the one that
// answers, by folding the plant's retained status topic in the broker's order (ha.go): claims carry
// a node name and an epoch, the Last Will frees the plant, and every measurement is tagged with the
// daemon's role and epoch at the point it arrived in that order, so no measurement is answered
// twice. A standby validates measurements (keeping the last seq), publishes nothing on the plant's
// topics but its claims, and claims when the active one goes offline or leaves a measurement
// unanswered for takeover_periods periods; the new active one adopts the previous one's last plan.
// Actions carry the epoch as a fencing token; an action goes out on the connection its
// measurement came in on or not at all, and a daemon counts as active on a new connection only
// once its claim comes back on it, so a daemon cut off or stopped never re-sends or republishes
// anything after it lost the plant (ha.go, "Connections").
//
// # Policy updates
//
// A plant's policy changes between two steps, never during one: the loop takes a new policy from its
// updates channel only when it is not inside a solve. New policies come from two places, both on the
// reload actor's goroutine. SIGHUP re-reads the configuration and every plant's policy (reload.go).
// The policy watch (watch.go) polls each plant's policy file every policy_watch (default 2s, 0: off):
// when its content hash changed, the file is loaded and checked against the family's Y_pb as at
// start, and swapped in; a file that does not load is logged, counted once in
// gbdmpc_controller_policy_reload_errors_total{plant}, and the running policy stays. The running
// version is in every action (policy_version), status and decision record (PolicyVersion), and in
// gbdmpc_controller_policy_info{plant,version} = 1.
//
// # Time
//
// Everything that decides by time (message age, deadlines, timestamps, readiness, watchdog liveness)
// reads Deps.Clock, so tests drive it. Tickers only wake loops up; they decide nothing.
//
// # Readiness
//
// /readyz is 200 when every plant's session is connected and subscribed and its last accepted
// measurement was received within period + max_age (the next one is due one period after the last
// and may be max_age late). Before a plant's first measurement, the same allowance runs from its
// first subscription: a freshly started daemon is ready while it waits for its plants, and turns
// unready if a plant never publishes. Policies are loaded before the sessions start (a policy that
// does not load stops the start), so a running daemon always has its policies.
package controller
