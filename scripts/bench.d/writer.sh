#!/usr/bin/env bash
# Writer overhead: N raw 1280x720 frames through AssetWriter vs. libswscale+libavcodec+libavformat called directly.
#
# Usage: scripts/bench writer [FRAMES] [RUNS]   (defaults: 300 frames, 7 runs of each)
#        CAPCTL_BENCH_THREADS=N for N encoder threads (default 1)
#
# Both paths convert YUYV 4:2:2 camera-like frames to yuv420p (AssetWriter with
# its own 4:2:2 to 4:2:0 conversion, the direct path with libswscale) and encode them with libx264 (preset veryfast, CRF 23, keyframe every 60)
# into an MP4 file. CPU time is user + system time of the whole process (all
# encoder threads) from the first frame to the finished file, measured inside
# the process with getrusage. Runs alternate between the two paths; the
# medians are compared. ffmpeg encoding the same raw frames is shown beside
# them for reference. The target is an overhead of at most 5%.
set -euo pipefail
cd "$(dirname "$0")/../.."
frames=${1:-300}
runs=${2:-7}
threads=${CAPCTL_BENCH_THREADS:-1}
export CAPCTL_BENCH_THREADS=$threads
scratch=${BENCH_SCRATCH:-.build-bench}

echo "building capctl-bench (release)..." >&2
swift build -c release --product capctl-bench --scratch-path "$scratch" >&2
bench="$scratch/release/capctl-bench"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

source scripts/bench.d/common.bash

writer_times=()
direct_times=()
for ((run = 1; run <= runs; run++)); do
  rm -f "$work"/*.mp4
  writer_times+=("$("$bench" writer "$frames" "$work/writer.mp4" | awk '{print $3}')")
  direct_times+=("$("$bench" direct "$frames" "$work/direct.mp4" | awk '{print $3}')")
  echo "run $run: writer ${writer_times[-1]} s, direct ${direct_times[-1]} s" >&2
done

ffmpeg_time=""
if command -v ffmpeg >/dev/null; then
  "$bench" rawfile "$frames" "$work/frames.yuv"
  ffmpeg_times=()
  for ((run = 1; run <= runs; run++)); do
    rm -f "$work/ffmpeg.mp4"
    # bash's `times` would include earlier children; measure this one alone.
    t=$( { /usr/bin/env time -f '%U %S' ffmpeg -v error -nostdin -f rawvideo -pix_fmt yuyv422 -s 1280x720 -r 30 \
          -i "$work/frames.yuv" -c:v libx264 -preset veryfast -crf 23 -g 60 -threads "$threads" -pix_fmt yuv420p "$work/ffmpeg.mp4" ; } 2>&1 | tail -1 | awk '{print $1 + $2}')
    ffmpeg_times+=("$t")
  done
  ffmpeg_time=$(printf '%s\n' "${ffmpeg_times[@]}" | median)
fi

writer_median=$(printf '%s\n' "${writer_times[@]}" | median)
direct_median=$(printf '%s\n' "${direct_times[@]}" | median)
ratio=$(awk -v w="$writer_median" -v d="$direct_median" 'BEGIN { printf "%.4f", w / d }')
overhead=$(awk -v r="$ratio" 'BEGIN { printf "%+.1f%%", (r - 1) * 100 }')

echo "writer benchmark: $frames frames 1280x720 YUYV -> H.264 (libx264 veryfast, CRF 23, $threads thread(s)) in MP4, $runs runs each"
echo "  AssetWriter           median CPU ${writer_median} s"
echo "  direct libav* calls   median CPU ${direct_median} s"
[[ -n $ffmpeg_time ]] && echo "  ffmpeg (reference)    median CPU ${ffmpeg_time} s (includes reading the raw frames and process start)"
echo "  ratio writer/direct   ${ratio} (overhead ${overhead}; target at most +5%)"
