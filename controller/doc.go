// Package controller is the daemon behind `gbdmpc serve`: it closes each configured plant's loop over
// MQTT under a per-step wall-clock deadline, and the MQTT testbed behind `gbdmpc simulate --mqtt`.
//
// # Actors
//
// Run starts a set of actors that all stop when one stops (prometheus's run groups):
//
//   - one plant loop per plant (plant.go). Its goroutine owns the plant's state — last accepted seq,
//     action seq, online/degraded state, the mpc controller and its policy — and selects over its
//     mailbox, policy updates and a heartbeat ticker, in the manner of etcd's raft node. Nothing
//     else touches that state.
//   - the plant's MQTT session (session.go), one paho client per plant, because MQTT gives one Last
//     Will per connection and every plant's status topic must be a Last Will. The message callback
//     only copies the payload into the plant's bounded mailbox (mailbox.go; when full the oldest is
//     dropped and counted) and returns, so a solve never stalls the MQTT client.
//   - the HTTP server (/metrics, /livez, /readyz), the systemd watchdog, the reload handler and the
//     readiness notifier.
//
// The embedded broker (broker.go, mochi-mqtt) and the decision log (telemetry) are opened before the
// actors start and closed after they stop, so every plant can still publish "offline" on the way out.
//
// # One control step
//
// For each measurement: decode the envelope ("v" = 1, integer "seq" and "ts_ms", no non-finite
// number anywhere), require seq greater than the last accepted one, require ts_ms within max_age of
// the daemon's clock (both ways), then let the family decode and range-check its fields. Any failure
// publishes one message on <prefix>/<plant>/error, counts gbdmpc_controller_rejected_total{reason},
// and nothing else happens. Otherwise the deadline is the receipt time plus the configured deadline,
// mpc's Step runs (recording every master problem through the gbd.Recorder adapter of recorder.go),
// and the action is published (QoS 1, not retained) with the daemon's own per-plant action seq. A
// fallback turns the retained status to degraded; the next optimal or gap solve turns it back online.
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
// daemon's role at the point it arrived in that order, so no measurement is answered twice. A
// standby validates measurements (keeping the last seq), publishes nothing on the plant's topics
// but its claims, and claims when the active one goes offline or leaves a measurement unanswered
// for takeover_periods periods; the new active one adopts the previous one's last plan.
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
