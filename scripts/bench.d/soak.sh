#!/usr/bin/env bash
# capctl serve for MINUTES under rounds of recordings, photos, live views, metrics and events: RSS and threads over time.
#
# Usage: scripts/bench soak [MINUTES] [KIND]   (defaults: 30 minutes, all)
#        KIND: all          a round is a 4 s recording, a photo, a snapshot, 2 s of /stream.mjpg,
#                           /metrics and 1 s of /events
#              recordings   a round is a 4 s recording
#              views        a round is a snapshot and 2 s of /stream.mjpg
#              photos       a round is a photo
#        CAPCTL_BENCH_VIDEO=DEV   the camera (default test-pattern)
#        CAPCTL_BENCH_AUDIO=DEV   the microphone (default test-tone; "none" for none)
#        CAPCTL_BENCH_WARMUP=MIN  minutes of warm-up before the growth is measured (default 3,
#                                 or a third of MINUTES when that is shorter)
#        CAPCTL_BENCH_BIN=DIR     the capctl and capctl-serve to measure (default: built here, release)
#
# The service runs with a release build on 127.0.0.1 (a port the kernel picks) in a temporary
# folder, and every round's files are deleted (DELETE /files/NAME) once the next round ends.
# Every 30 s: the elapsed time, rounds done, VmRSS (/proc/PID/status, sampled every 2 s) in
# MiB now and its lowest and highest over those 30 s, and the service's threads. At the end:
# the highest RSS of the 30 s that end the warm-up and of the last 30 s, and the growth
# between, also per 30 minutes (the goal: at most 5 MiB over 30 minutes after 3 minutes of
# warm-up).
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-30}
kind=${2:-all}
video=${CAPCTL_BENCH_VIDEO:-test-pattern}
audio=${CAPCTL_BENCH_AUDIO:-test-tone}
scratch=${BENCH_SCRATCH:-.build-bench}
[[ $minutes =~ ^[1-9][0-9]*$ ]] || { echo "bench soak: MINUTES is a whole number, not '$minutes'" >&2; exit 64; }
case $kind in all | recordings | views | photos) ;; *)
  echo "bench soak: KIND is all, recordings, views or photos, not '$kind'" >&2
  exit 64
  ;;
esac
command -v curl >/dev/null || { echo "bench soak: no curl (scripts/setup installs it)" >&2; exit 1; }

if [[ -n ${CAPCTL_BENCH_BIN:-} ]]; then
  bin=$CAPCTL_BENCH_BIN
else
  echo "building capctl and capctl-serve (release)..." >&2
  swift build -c release --product capctl --scratch-path "$scratch" >&2
  swift build -c release --product capctl-serve --scratch-path "$scratch" >&2
  bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/capctl-bench-soak.XXXXXX")
mkdir "$work/served"
pid=
sampler=
stop() {
  [[ -n $sampler ]] && kill "$sampler" 2>/dev/null
  if [[ -n $pid ]]; then
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 130' INT TERM

inputs=(--video "$video")
[[ $audio != none ]] && inputs+=(--audio "$audio")
"$bin/capctl" serve "${inputs[@]}" --listen 127.0.0.1:0 --dir "$work/served" >"$work/serve.out" 2>"$work/serve.err" &
pid=$!
port=
for _ in $(seq 600); do
  port=$(sed -n 's/.*"event":"service-started".*"port":\([0-9]*\).*/\1/p' "$work/serve.out" | head -1)
  [[ -n $port ]] && break
  kill -0 "$pid" 2>/dev/null || { echo "bench soak: capctl serve ended:" >&2; cat "$work/serve.err" >&2; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { echo "bench soak: capctl serve did not start" >&2; exit 1; }
api=http://127.0.0.1:$port
echo "capctl serve ${inputs[*]} (pid $pid) on $api; rounds: $kind, $minutes min" >&2

rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$pid/status"; }

# The sampler: VmRSS and the thread count every 2 s (in $work/samples.txt: seconds, rounds,
# MiB, threads), and every 30 s a line: the elapsed time, rounds done, the RSS now, and its
# lowest and highest over those 30 s (a recording's encoder comes and goes within a round).
start=$(date +%s)
echo 0 >"$work/rounds"
(
  next=0
  while kill -0 "$pid" 2>/dev/null; do
    elapsed=$(($(date +%s) - start))
    echo "$elapsed $(cat "$work/rounds") $(rss) $(threads)" >>"$work/samples.txt"
    if ((elapsed >= next)); then
      awk -v from=$((next - 30)) '$1 >= from { t = $1; r = $2; m = $3; n = $4
          if (lo == "" || m < lo) lo = m; if (m > hi) hi = m; if (n > most) most = n }
        END { printf "%6.1f min  %5d rounds  RSS %6.1f MiB (%6.1f to %6.1f)  threads %3d (most %d)\n", t / 60, r, m, lo, hi, n, most }' \
        "$work/samples.txt"
      next=$((next + 30))
    fi
    sleep 2
  done
) &
sampler=$!

json() { curl -sf --max-time 30 -H 'Content-Type: application/json' "$@"; }

# record N: a 4 s recording, waiting until it has finished.
record() {
  local id
  id=$(json -X POST -d "{\"file\": \"soak-$1.mp4\", \"maxDuration\": \"4s\"}" "$api/recordings" |
    sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
  [[ -n $id ]] || { echo "bench soak: POST /recordings failed" >&2; return 1; }
  for _ in $(seq 300); do
    json "$api/recordings/$id" | grep -q '"state":"finished"' && return 0
    sleep 0.1
  done
  echo "bench soak: recording $id did not finish" >&2
  return 1
}
photo() { json -X POST -d '{}' -o /dev/null "$api/photos"; }
view() {
  curl -sf --max-time 30 -o /dev/null "$api/snapshot.jpg"
  curl -s --max-time 2 -o /dev/null "$api/stream.mjpg" || true
}
others() {
  curl -sf --max-time 30 -o /dev/null "$api/metrics"
  curl -s -N --max-time 1 -o /dev/null "$api/events" || true
}
# Deletes the files of rounds before this one (a file being written is refused: 409).
clean() {
  local name
  for name in $(json "$api/files" | grep -o '"name":"soak-[^"]*"' | sed 's/"name":"\(.*\)"/\1/'); do
    [[ $name == "soak-$1.mp4" ]] && continue
    curl -s -o /dev/null -X DELETE "$api/files/$name" || true
  done
}

end=$((start + minutes * 60))
round=0
while (($(date +%s) < end)); do
  round=$((round + 1))
  case $kind in
    all) record "$round" && photo && view && others ;;
    recordings) record "$round" ;;
    views) view ;;
    photos) photo ;;
  esac || { echo "bench soak: round $round failed" >&2; tail -5 "$work/serve.err" >&2; exit 1; }
  clean "$round"
  echo "$round" >"$work/rounds.new" && mv "$work/rounds.new" "$work/rounds"
done
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
sampler=

# The growth: the highest RSS of the 30 s that end the warm-up against that of the last 30 s
# of rounds (both hold a whole round: a recording's encoder, a view's, a photo's), and the
# lowest of each too.
warmup=${CAPCTL_BENCH_WARMUP:-3}
awk -v warmup="$warmup" -v minutes="$minutes" -v kind="$kind" -v rounds="$round" '
  { t[NR] = $1; m[NR] = $3; n = NR }
  function window(from, to,   i) {
    lo = ""; hi = ""
    for (i = 1; i <= n; i++) if (t[i] >= from && t[i] <= to) {
      if (lo == "" || m[i] < lo) lo = m[i]; if (hi == "" || m[i] > hi) hi = m[i] }
  }
  END {
    w = warmup * 60; if (w > minutes * 20) w = minutes * 20
    end = t[n]
    printf "\n%s: %d rounds in %.1f min; RSS at the start %.1f MiB\n", kind, rounds, end / 60, m[1]
    if (end - 30 < w + 30) { print "too short for a warm-up: no growth measured"; exit }
    window(w - 30, w); wlo = lo; whi = hi
    window(end - 30, end); elo = lo; ehi = hi
    span = (end - w) / 60
    printf "RSS after %.1f min of warm-up %.1f MiB (lowest %.1f), at the end %.1f MiB (lowest %.1f): highest over 30 s\n", w / 60, whi, wlo, ehi, elo
    printf "growth after the warm-up: %+.1f MiB in %.1f min (%+.1f MiB per 30 min; goal: at most 5 over 30 min)\n", ehi - whi, span, (ehi - whi) / span * 30
  }' "$work/samples.txt"
