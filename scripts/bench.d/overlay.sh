#!/usr/bin/env bash
# Burned-in text (--overlay): CPU per frame of drawing it at 1080p and 720p (yuv420p, yuyv422), and a recording with it against one without.
#
# Usage: scripts/bench overlay [RUNS] [SECONDS]   (defaults: 3 runs of each recording, 20 s of media)
#
# Per frame: capctl-bench overlay draws a 27-character time stamp ('Door %Y-%m-%d
# %H:%M:%S.%f') into 300 frames with TextOverlayRenderer (a copy of the lent frame into a
# pooled buffer, then the box and glyphs), and prints the CPU microseconds per frame beside
# those of a plain copy of the same frame; and into 300 frames of an MJPEG camera (one
# JPEG of testsrc2, decoded to yuv420p first), beside ffmpeg decoding the same JPEG 300
# times on one thread to yuv420p (which includes ffmpeg's start-up). Recordings: capctl record --video
# test-pattern,size=1280x720 --max-duration SECONDS, in real time (30 fps), H.264 (the
# default settings), with and without --overlay; CPU seconds (user + system) and peak
# memory, medians of RUNS alternating runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
seconds=${2:-20}
scratch=${BENCH_SCRATCH:-.build-bench}

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/setup installs the 'time' package)" >&2; exit 1; }

echo "building capctl and capctl-bench (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
swift build -c release --product capctl-bench --scratch-path "$scratch" >&2
capctl="$scratch/release/capctl"
bench="$scratch/release/capctl-bench"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench.d/common.bash

echo "per frame (CPU microseconds: overlay = copy + draw; copy = memcpy of the frame alone)"
for format in yuv420p yuyv422; do
  for size in 1920x1080 1280x720; do
    "$bench" overlay 300 "$format" "$size"
  done
done
echo "per frame of an MJPEG camera (CPU microseconds: decode to yuv420p + draw; ffmpeg's decode alone of the same JPEG)"
for size in 1920x1080 1280x720; do
  ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=$size:rate=1" -frames:v 1 -pix_fmt yuvj422p -q:v 3 "$work/frame-$size.jpg"
  line=$("$bench" overlay-mjpeg 300 "$size" "$work/frame-$size.jpg")
  # ffmpeg decoding the same JPEG 300 times (an MJPEG stream of it), one thread, to 4:2:0: its CPU time over the frames, beside ours.
  for ((i = 0; i < 300; i++)); do cat "$work/frame-$size.jpg"; done >"$work/frames-$size.mjpeg"
  ffmpeg_us=$(/usr/bin/time -f '%U %S' ffmpeg -v error -nostdin -threads 1 -f mjpeg -i "$work/frames-$size.mjpeg" -pix_fmt yuv420p -f null - 2>&1 |
    tail -1 | awk '{ printf "%.1f", ($1 + $2) / 300 * 1e6 }')
  echo "$line ffmpeg-decode $ffmpeg_us"
done

plain_cpu=() plain_mem=() text_cpu=() text_mem=()
for ((run = 1; run <= runs; run++)); do
  result=$(rm -f "$work/plain.mp4"; measure "$capctl" record --video test-pattern,size=1280x720 --max-duration "$seconds" \
    --min-free-space 0 --progress json "$work/plain.mp4")
  plain_cpu+=("${result% *}") plain_mem+=("${result#* }")
  result=$(rm -f "$work/text.mp4"; measure "$capctl" record --video test-pattern,size=1280x720 --max-duration "$seconds" \
    --overlay 'Door %Y-%m-%d %H:%M:%S.%f' --min-free-space 0 --progress json "$work/text.mp4")
  text_cpu+=("${result% *}") text_mem+=("${result#* }")
done
p_cpu=$(printf '%s\n' "${plain_cpu[@]}" | median) t_cpu=$(printf '%s\n' "${text_cpu[@]}" | median)
p_mem=$(printf '%s\n' "${plain_mem[@]}" | median) t_mem=$(printf '%s\n' "${text_mem[@]}" | median)
echo
echo "record test-pattern 1280x720, $seconds s, medians of $runs runs"
printf '%-16s %10s %12s\n' case "cpu s" "peak KiB"
printf '%-16s %10.3f %12d\n' "no overlay" "$p_cpu" "$p_mem"
printf '%-16s %10.3f %12d\n' "--overlay" "$t_cpu" "$t_mem"
awk -v a="$p_cpu" -v b="$t_cpu" -v s="$seconds" 'BEGIN { printf "overlay costs %.3f CPU s more (%.1f%%), %.0f us a frame at 30 fps\n", b - a, (b - a) / a * 100, (b - a) / (s * 30) * 1e6 }'
