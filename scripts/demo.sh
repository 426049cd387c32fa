#!/usr/bin/env bash
# make demo: the daemon with its embedded broker serves the simulated pump station over MQTT for one
# plant day (96 periods of 15 min, run 900x faster: about two minutes), then prints the loop's
# summary and writes the closed-loop figure.
#
#   scripts/demo.sh [STEPS]        (default 96; STEPS=8 for a quick look)
#
# Outputs in out/demo/: daemon.log, decisions/ (the decision log), steps.csv, summary.{json,txt},
# figure.png. Uses bin/gbdmpc, built by `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin/gbdmpc}
CONFIG=${CONFIG:-configs/pumpstation-embedded.yaml}
STEPS=${1:-${STEPS:-96}}
OUT=${OUT:-out/demo}
BROKER=tcp://127.0.0.1:1883
HTTP=127.0.0.1:9464

[ -x "$BIN" ] || { echo "demo: $BIN not found; run 'make build' first" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/daemon.log

# Anything still listening on the demo's ports would be a daemon from an interrupted demo: say so
# rather than kill what we did not start.
for hp in 127.0.0.1:1883 "$HTTP"; do
  if (exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}") 2>/dev/null; then
    echo "demo: $hp is already in use (a daemon from an earlier demo?); stop it first" >&2
    exit 1
  fi
done

echo "demo: starting the daemon ($CONFIG, embedded broker on ${BROKER#tcp://}, metrics on http://$HTTP/metrics)"
GBDMPC_DECISION_LOG_DIR="$OUT/decisions" "$BIN" serve --config "$CONFIG" >"$OUT/daemon.log" 2>&1 &
DAEMON=$!
stop_daemon() {
  if kill -0 "$DAEMON" 2>/dev/null; then
    kill -TERM "$DAEMON" 2>/dev/null || true
    wait "$DAEMON" 2>/dev/null || true
  fi
}
trap stop_daemon EXIT INT TERM

# Ready means: broker up, session subscribed, policy loaded (/readyz 200).
ready=""
for _ in $(seq 1 150); do
  if ! kill -0 "$DAEMON" 2>/dev/null; then
    echo "demo: the daemon exited during start-up; its log:" >&2
    cat "$OUT/daemon.log" >&2
    exit 1
  fi
  if { exec 3<>"/dev/tcp/${HTTP%:*}/${HTTP#*:}"; } 2>/dev/null; then
    printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "$HTTP" >&3
    status=$(head -n1 <&3 || true)
    exec 3<&- 3>&-
    case "$status" in *" 200 "*) ready=1; break ;; esac
  fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "demo: daemon not ready after 30 s; see $OUT/daemon.log" >&2; exit 1; }

echo "demo: running the simulated pump station over MQTT for $STEPS periods"
"$BIN" simulate --plant pumpstation --mqtt "$BROKER" --steps "$STEPS" --out "$OUT"

echo "demo: stopping the daemon"
stop_daemon
trap - EXIT INT TERM
echo "demo: daemon log in $OUT/daemon.log, decision log in $OUT/decisions/, figure in $OUT/"
ls "$OUT"
