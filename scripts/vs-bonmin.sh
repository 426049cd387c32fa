#!/usr/bin/env bash
# vs-bonmin.sh CONFIG INSTANCES — each instance line solved by `gbdmpc solve --config CONFIG` and
# then by Bonmin B-BB (`gbdmpc-bonmin`, make bonmin), one process at a time, pair by pair; one JSON
# line per instance with both statuses, objectives and solve times (each result's total_seconds)
# and their ratio. Used for docs/performance.md, "Against Bonmin".
set -euo pipefail
cfg=$1 inst=$2
limit=${LIMIT:-120}
here=$(cd "$(dirname "$0")/.." && pwd)
gbd=${GBDMPC:-$here/bin/gbdmpc} bon=${GBDMPC_BONMIN:-$here/bin/gbdmpc-bonmin}
i=0
while IFS= read -r line; do
  i=$((i + 1))
  g=$(printf '%s\n' "$line" | "$gbd" solve --config "$cfg" --deadline "$limit" 2>/dev/null)
  b=$(printf '%s\n' "$line" | "$bon" --config "$cfg" --algorithm bbb --time-limit "${limit}s" 2>/dev/null)
  python3 - "$i" "$g" "$b" <<'PY'
import json, sys
i, g, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(json.dumps({"instance": int(i),
    "gbdmpc": {k: g.get(k) for k in ("status", "objective", "iterations", "total_seconds")},
    "bonmin": {k: b.get(k) for k in ("status", "objective", "total_seconds")},
    "ratio": b["total_seconds"] / g["total_seconds"] if g.get("total_seconds") else None}))
PY
done < "$inst"
