#!/usr/bin/env bash
# capctl serve under load: wrk on GET /session for 30 s (2 threads, 16 connections) beside a
# 32 s recording of the test camera. Passes when every answer was 2xx, the file holds every
# frame the recording reports (ffprobe counts them) and the recording dropped none.
#
# Run alone, as a stage of scripts/test after swift test: on a machine of two cores, the
# tests swift test runs beside one another would starve the capture, not the API.
#
#   Tests/Service/load.sh        (CAPCTL: the capctl to run, default .build/debug/capctl)
set -euo pipefail
cd "$(dirname "$0")/../.."
capctl=${CAPCTL:-.build/debug/capctl}
for tool in wrk curl ffprobe python3; do
  command -v "$tool" >/dev/null || { echo "load: no $tool (scripts/setup installs it)" >&2; exit 1; }
done
work=$(mktemp -d)
service=
trap '[[ -n $service ]] && kill "$service" 2>/dev/null; rm -rf "$work"' EXIT

# field EVENT KEY [RECORDING]: KEY of the first EVENT on the service's stdout ("" if none yet)
field() {
  python3 - "$work/out" "$@" <<'PY'
import json, sys
path, name, key = sys.argv[1:4]
for line in open(path):
    if not line.startswith("{"): continue
    event = json.loads(line)
    if event.get("event") == name and (len(sys.argv) < 5 or event.get("recording") == sys.argv[4]):
        print(event.get(key, "")); break
PY
}
# wait_for EVENT KEY SECONDS [RECORDING]: the field, once the event is there
wait_for() {
  local deadline=$((SECONDS + $3)) value
  while ((SECONDS < deadline)); do
    value=$(field "$1" "$2" ${4:+"$4"})
    [[ -n $value ]] && { echo "$value"; return 0; }
    sleep 0.2
  done
  echo "load: no $1 event within $3 s; stderr: $(tail -3 "$work/err")" >&2
  return 1
}

mkdir "$work/rec"
"$capctl" serve --video test-pattern --listen 127.0.0.1:0 --dir "$work/rec" >"$work/out" 2>"$work/err" &
service=$!
port=$(wait_for service-started port 30)
id=$(curl -sS --fail-with-body -X POST -H 'Content-Type: application/json' --data-binary '{"file": "load.mp4", "maxDuration": "32s"}' \
  "http://127.0.0.1:$port/recordings" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
wrk -t 2 -c 16 -d 30s --latency "http://127.0.0.1:$port/session" >"$work/wrk.txt"
frames=$(wait_for finished frames 40 "$id")
dropped=$(field finished dropped "$id")
in_file=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$work/rec/load.mp4")
rate=$(awk '/^Requests\/sec/ { print $2 }' "$work/wrk.txt")
p99=$(awk '$1 == "99%" { print $2 }' "$work/wrk.txt")
kill -TERM "$service"
status=0
wait "$service" || status=$?
service=
echo "load: $rate requests/s on GET /session (p99 $p99) beside a recording of $frames frames ($in_file in the file), $dropped dropped; exit $status"
failed=0
if grep -q "Non-2xx" "$work/wrk.txt"; then echo "load: FAILED: answers other than 2xx: $(grep Non-2xx "$work/wrk.txt")"; failed=1; fi
[[ $frames == "$in_file" ]] || { echo "load: FAILED: $frames frames reported, $in_file in the file"; failed=1; }
[[ $frames == 960 ]] || { echo "load: FAILED: $frames frames for 32 s at 30 fps (960)"; failed=1; }
[[ $dropped == 0 ]] || { echo "load: FAILED: $dropped dropped"; failed=1; }
[[ $status == 0 ]] || { echo "load: FAILED: the service exited $status after SIGTERM"; failed=1; }
exit $failed
