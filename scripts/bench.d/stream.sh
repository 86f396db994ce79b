#!/usr/bin/env bash
# capctl record + one RTMP stream vs. record alone, and vs. ffmpeg's tee muxer doing the same.
#
# Usage: scripts/bench stream [RUNS] [SECONDS]   (defaults: 5 runs of each, 6 s of media)
#        CAPCTL_BENCH_THREADS=N encoder threads (default 1)
#
# The input is a 1280x720 30 fps testsrc2 clip in Y4M (4:2:0, so neither side decodes or
# converts), played as a live camera in real time (streams are live). Each side encodes it
# once with libx264 (preset veryfast, live tuning, a keyframe every 2 s, CRF 23):
#   record alone:   capctl record --video file:IN … out.mp4
#   record+stream:  the same with --stream rtmp://127.0.0.1:PORT/live/bench (one encode feeds both)
#   ffmpeg tee:     ffmpeg -re -i IN -c:v libx264 … -f tee "out.mp4|[f=flv]rtmp://…"
# The server is nginx with the RTMP module on 127.0.0.1 (live, not recording), started with a
# configuration of the benchmark's own; only the client's CPU is measured (user + system
# seconds, and peak memory). Runs alternate; medians and the median of per-run ratios
# ("paired", steadier on a noisy machine) are printed. Targets: record+stream at most 1.10 x
# record alone, and at most ffmpeg's tee.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
seconds=${2:-6}
threads=${CAPCTL_BENCH_THREADS:-1}
scratch=${BENCH_SCRATCH:-.build-bench}

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/setup installs the 'time' package)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "bench: ffmpeg is missing (scripts/setup installs it)" >&2; exit 1; }
[[ -f /usr/lib/nginx/modules/ngx_rtmp_module.so ]] || { echo "bench: nginx's RTMP module is missing (scripts/setup installs libnginx-mod-rtmp)" >&2; exit 1; }

echo "building capctl (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
capctl="$scratch/release/capctl"

work=$(mktemp -d)
nginx_pid=
cleanup() {
  [[ -n $nginx_pid ]] && kill "$nginx_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
user root;
daemon off;
master_process off;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events {}
rtmp { server { listen 127.0.0.1:$port; application live { live on; } } }
EOF
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
for _ in $(seq 50); do
  grep -q "$(printf '0100007F:%04X 00000000:0000 0A' "$port")" /proc/net/tcp && break
  sleep 0.1
done
url="rtmp://127.0.0.1:$port/live/bench"

echo "making the input ($seconds s)..." >&2
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$seconds" -pix_fmt yuv420p -f yuv4mpegpipe "$work/720p.y4m"

source scripts/bench.d/common.bash

encode=(--video "file:$work/720p.y4m" --video-codec h264 --preset veryfast --crf 23 --keyframe-interval 2 --threads "$threads"
  --min-free-space 0 --progress json --overwrite)
alone=() streamed=() tee=() alone_mem=() streamed_mem=() tee_mem=() pair_alone=() pair_tee=()
for ((run = 1; run <= runs; run++)); do
  result=$(measure "$capctl" record "${encode[@]}" "$work/alone.mp4")
  alone+=("${result% *}"); alone_mem+=("${result#* }")
  result=$(measure "$capctl" record "${encode[@]}" --stream "$url" "$work/streamed.mp4")
  streamed+=("${result% *}"); streamed_mem+=("${result#* }")
  grep -q '"stream-connected"' "$work/stdout.txt" || { echo "bench: the stream did not connect" >&2; cat "$work/stdout.txt" >&2; exit 1; }
  sent=$(grep '"finished"' "$work/stdout.txt" | python3 -c 'import json, sys; s = json.loads(sys.stdin.read())["streams"][0]; print(s["frames"], s["droppedFrames"])')
  result=$(measure ffmpeg -v error -nostdin -y -re -i "$work/720p.y4m" -map 0:v -c:v libx264 -preset veryfast -tune zerolatency -crf 23 \
    -g 60 -threads "$threads" -pix_fmt yuv420p -f tee "$work/tee.mp4|[f=flv]$url")
  tee+=("${result% *}"); tee_mem+=("${result#* }")
  pair_alone+=("$(awk -v a="${streamed[-1]}" -v b="${alone[-1]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
  pair_tee+=("$(awk -v a="${streamed[-1]}" -v b="${tee[-1]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
  echo "run $run: record ${alone[-1]} s, record+stream ${streamed[-1]} s (stream: frames sent, dropped: $sent), ffmpeg tee ${tee[-1]} s" >&2
done

a=$(printf '%s\n' "${alone[@]}" | median)
s=$(printf '%s\n' "${streamed[@]}" | median)
t=$(printf '%s\n' "${tee[@]}" | median)
am=$(printf '%s\n' "${alone_mem[@]}" | median)
sm=$(printf '%s\n' "${streamed_mem[@]}" | median)
tm=$(printf '%s\n' "${tee_mem[@]}" | median)
pa=$(printf '%s\n' "${pair_alone[@]}" | median)
pt=$(printf '%s\n' "${pair_tee[@]}" | median)
echo "stream benchmark: $seconds s of 1280x720 30 fps testsrc2 played live, $runs runs each, $threads encoder thread(s); medians"
echo "  capctl record --video file:IN --video-codec h264 --preset veryfast --crf 23 --keyframe-interval 2 --threads $threads [--stream rtmp://…] out.mp4"
echo "  ffmpeg -re -i IN -c:v libx264 -preset veryfast -tune zerolatency -crf 23 -g 60 -threads $threads -f tee 'out.mp4|[f=flv]rtmp://…'"
printf '%-28s %9s %9s %11s\n' "case" "CPU s" "peak MiB" ""
awk -v c="$a" -v m="$am" 'BEGIN { printf "%-28s %9.3f %9.1f\n", "capctl record", c, m / 1024 }'
awk -v c="$s" -v m="$sm" 'BEGIN { printf "%-28s %9.3f %9.1f\n", "capctl record + stream", c, m / 1024 }'
awk -v c="$t" -v m="$tm" 'BEGIN { printf "%-28s %9.3f %9.1f\n", "ffmpeg tee (file + stream)", c, m / 1024 }'
awk -v s="$s" -v a="$a" -v p="$pa" 'BEGIN { printf "record+stream / record alone: %.2f (paired %.2f; target <= 1.10)\n", s / a, p }'
awk -v s="$s" -v t="$t" -v p="$pt" 'BEGIN { printf "record+stream / ffmpeg tee:   %.2f (paired %.2f; target <= 1.00)\n", s / t, p }'
