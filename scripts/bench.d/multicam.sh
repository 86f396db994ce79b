#!/usr/bin/env bash
# capctl record with two 720p cameras to two H.264 tracks vs. ffmpeg with two inputs and -map.
#
# Usage: scripts/bench multicam [RUNS] [SECONDS]   (defaults: 5 runs of each, 4 s of media)
#        CAPCTL_BENCH_THREADS=N encoder threads per track (default 1)
#
# Two 1280x720 30 fps 4:2:2 Y4M inputs are made with ffmpeg (testsrc2 and testsrc, so the
# two pictures differ). capctl replays both as cameras of one session
# (--video file:A --video file:B --no-realtime) into one MP4 with a track per camera,
# encoding each with libx264 (preset ultrafast, CRF 23, 4:2:0); ffmpeg reads the same two
# files (-i A -i B -map 0:v -map 1:v) with the same encoder settings. Each run is measured
# with /usr/bin/time (user + system CPU seconds from the shell's `times`, peak resident
# memory); runs alternate between the two tools and the medians are compared, with the
# median of the per-run ratios ("paired"), steadier on a shared machine. Target: capctl at
# most 1.0 x ffmpeg's CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
seconds=${2:-4}
threads=${CAPCTL_BENCH_THREADS:-1}
scratch=${BENCH_SCRATCH:-.build-bench}

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/setup installs the 'time' package)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "bench: ffmpeg is missing (scripts/setup installs it)" >&2; exit 1; }

echo "building capctl (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
capctl="$scratch/release/capctl"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "making inputs ($seconds s each)..." >&2
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$seconds" -pix_fmt yuv422p -f yuv4mpegpipe "$work/a.y4m"
ffmpeg -v error -nostdin -f lavfi -i "testsrc=size=1280x720:rate=30" -t "$seconds" -pix_fmt yuv422p -f yuv4mpegpipe "$work/b.y4m"

source scripts/bench.d/common.bash

# frames FILE STREAM: the packets of one video stream.
frames() { ffprobe -v error -select_streams "$2" -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }

c_cpu=() c_mem=() f_cpu=() f_mem=() pairs=()
for ((run = 1; run <= runs; run++)); do
  result=$(rm -f "$work/capctl.mp4"; measure "$capctl" record --video "file:$work/a.y4m" --video "file:$work/b.y4m" --no-realtime \
    --video-codec h264 --preset ultrafast --crf 23 --threads "$threads" --min-free-space 0 --progress json "$work/capctl.mp4")
  c_cpu+=("${result% *}")
  c_mem+=("${result#* }")
  result=$(measure ffmpeg -v error -nostdin -y -i "$work/a.y4m" -i "$work/b.y4m" -map 0:v -map 1:v \
    -c:v libx264 -preset ultrafast -crf 23 -threads "$threads" -pix_fmt yuv420p "$work/ffmpeg.mp4")
  f_cpu+=("${result% *}")
  f_mem+=("${result#* }")
  # Both files hold both pictures whole, or the comparison means nothing.
  for file in capctl ffmpeg; do
    for stream in v:0 v:1; do
      count=$(frames "$work/$file.mp4" "$stream")
      if [[ $count != $((30 * seconds)) ]]; then
        echo "bench: $file.mp4 $stream has $count frames, not $((30 * seconds))" >&2
        exit 1
      fi
    done
  done
  pairs+=("$(awk -v c="${c_cpu[-1]}" -v f="${f_cpu[-1]}" 'BEGIN { print (f > 0 ? c / f : 0) }')")
  echo "multicam run $run: capctl ${c_cpu[-1]} s ${c_mem[-1]} KiB, ffmpeg ${f_cpu[-1]} s ${f_mem[-1]} KiB" >&2
done

cc=$(printf '%s\n' "${c_cpu[@]}" | median)
cm=$(printf '%s\n' "${c_mem[@]}" | median)
fc=$(printf '%s\n' "${f_cpu[@]}" | median)
fm=$(printf '%s\n' "${f_mem[@]}" | median)
p=$(printf '%s\n' "${pairs[@]}" | median)
echo "multicam benchmark: two 1280x720 30 fps inputs of $seconds s, two H.264 tracks, $runs runs each, $threads encoder thread(s) per track; medians"
echo "  capctl record --video file:A --video file:B --no-realtime --video-codec h264 --preset ultrafast --crf 23 --threads $threads --min-free-space 0 out.mp4"
echo "  ffmpeg -y -i A -i B -map 0:v -map 1:v -c:v libx264 -preset ultrafast -crf 23 -threads $threads -pix_fmt yuv420p out.mp4"
printf '%-22s %9s %9s %7s %7s %11s %11s %7s\n' "case" "capctl s" "ffmpeg s" "ratio" "paired" "capctl MiB" "ffmpeg MiB" "ratio"
awk -v cc="$cc" -v fc="$fc" -v p="$p" -v cm="$cm" -v fm="$fm" \
  'BEGIN { printf "%-22s %9.3f %9.3f %7.2f %7.2f %11.0f %11.0f %7.2f\n", "2 x 720p -> 2 x h264", cc, fc, (fc > 0 ? cc / fc : 0), p, cm / 1024, fm / 1024, cm / fm }'
