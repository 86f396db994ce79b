#!/usr/bin/env bash
# capctl record vs. ffmpeg (encode Y4M to H.264, copy MJPEG); two recordings sharing one encoder vs. one.
#
# Usage: scripts/bench record [RUNS] [SECONDS]   (defaults: 5 runs of each, 4 s of media; the
#        MJPEG input is 5 times longer, as copying takes too little CPU time to measure otherwise)
#        CAPCTL_BENCH_THREADS=N encoder threads (default 1)
#        CAPCTL_BENCH_CASES="h264 mjpeg shared" which cases to run (default all three)
#
# Inputs are made with ffmpeg's testsrc2 at 30 fps: 1280x720 and 1920x1080 4:2:2 Y4M files
# (yuv422p: Y4M holds no packed YUYV; the chroma is that of a YUYV camera), and a 1280x720
# MJPEG stream. capctl replays each as a camera
# (--video file:IN, --no-realtime) into an MP4 file, encoding with libx264 (preset
# ultrafast, CRF 23, 4:2:0) or copying the MJPEG frames; ffmpeg does the same from the same file.
# Each run is measured with /usr/bin/time (user + system CPU seconds, peak resident
# memory); runs alternate between the two tools and the medians are compared. On a shared,
# noisy machine the ratio of each back-to-back pair is steadier than the medians taken apart:
# the "paired" column is the median of those per-run ratios.
#
# "shared": one session with a live 720p 30 fps camera (SECONDS of frames replayed in real
# time) and two MovieFileOutputs with the same settings (libx264 veryfast, live tuning), which
# share one encoder, against the same session with one output (capctl-bench session). The
# target is two outputs at most 1.15 x the CPU of one.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
seconds=${2:-4}
threads=${CAPCTL_BENCH_THREADS:-1}
cases=${CAPCTL_BENCH_CASES:-h264 mjpeg shared}
scratch=${BENCH_SCRATCH:-.build-bench}

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/setup installs the 'time' package)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "bench: ffmpeg is missing (scripts/setup installs it)" >&2; exit 1; }

echo "building capctl (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
capctl="$scratch/release/capctl"
if [[ " $cases " == *" shared "* ]]; then
  swift build -c release --product capctl-bench --scratch-path "$scratch" >&2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "making inputs ($seconds s each)..." >&2
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$seconds" -pix_fmt yuv422p -f yuv4mpegpipe "$work/720p.y4m"
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t "$seconds" -pix_fmt yuv422p -f yuv4mpegpipe "$work/1080p.y4m"
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$((5 * seconds))" -c:v mjpeg -q:v 3 -f mjpeg "$work/720p.mjpeg"

source scripts/bench.d/common.bash

rows=()
# bench_case NAME INPUT CAPCTL_ARGS FFMPEG_ARGS (argument lists as strings, split on spaces)
bench_case() {
  local name=$1 input=$2 capctl_args=$3 ffmpeg_args=$4
  local c_cpu=() c_mem=() f_cpu=() f_mem=() run result
  for ((run = 1; run <= runs; run++)); do
    # shellcheck disable=SC2086
    result=$(rm -f "$work/capctl.mp4"; measure "$capctl" record --video "file:$input" --no-realtime $capctl_args \
      --min-free-space 0 --progress json "$work/capctl.mp4")
    c_cpu+=("${result% *}")
    c_mem+=("${result#* }")
    # shellcheck disable=SC2086
    result=$(measure ffmpeg -v error -nostdin -y -i "$input" $ffmpeg_args "$work/ffmpeg.mp4")
    f_cpu+=("${result% *}")
    f_mem+=("${result#* }")
    echo "$name run $run: capctl ${c_cpu[-1]} s ${c_mem[-1]} KiB, ffmpeg ${f_cpu[-1]} s ${f_mem[-1]} KiB" >&2
  done
  local cc cm fc fm paired i
  paired=$(for ((i = 0; i < runs; i++)); do awk -v c="${c_cpu[i]}" -v f="${f_cpu[i]}" 'BEGIN { print (f > 0 ? c / f : 0) }'; done | median)
  cc=$(printf '%s\n' "${c_cpu[@]}" | median)
  cm=$(printf '%s\n' "${c_mem[@]}" | median)
  fc=$(printf '%s\n' "${f_cpu[@]}" | median)
  fm=$(printf '%s\n' "${f_mem[@]}" | median)
  rows+=("$(awk -v n="$name" -v cc="$cc" -v fc="$fc" -v p="$paired" -v cm="$cm" -v fm="$fm" \
    'BEGIN { printf "%-22s %9.3f %9.3f %7.2f %7.2f %11.0f %11.0f %7.2f", n, cc, fc, (fc > 0 ? cc / fc : 0), p, cm / 1024, fm / 1024, cm / fm }')")
}

encode="--video-codec h264 --preset ultrafast --crf 23 --threads $threads"
# capctl encodes 4:2:0 (the encoder's default); ffmpeg would keep 4:2:2 (High 4:2:2) unless told.
x264="-c:v libx264 -preset ultrafast -crf 23 -threads $threads -pix_fmt yuv420p"
if [[ " $cases " == *" h264 "* ]]; then
  bench_case "720p 4:2:2 -> h264" "$work/720p.y4m" "$encode" "$x264"
  bench_case "1080p 4:2:2 -> h264" "$work/1080p.y4m" "$encode" "$x264"
fi
if [[ " $cases " == *" mjpeg "* ]]; then
  bench_case "720p MJPEG copy" "$work/720p.mjpeg" "--video-codec copy" "-c copy"
fi

if [[ " $cases " == *" shared "* ]]; then
  one=() two=() pairs=()
  for ((run = 1; run <= runs; run++)); do
    rm -f "$work"/session-*.mp4
    line1=$(CAPCTL_BENCH_THREADS=$threads "$scratch/release/capctl-bench" session "$((30 * seconds))" "$work" 1)
    rm -f "$work"/session-*.mp4
    line2=$(CAPCTL_BENCH_THREADS=$threads "$scratch/release/capctl-bench" session "$((30 * seconds))" "$work" 2)
    one+=("$(awk '{ print $3 }' <<<"$line1")")
    two+=("$(awk '{ print $3 }' <<<"$line2")")
    pairs+=("$(awk -v a="${two[-1]}" -v b="${one[-1]}" 'BEGIN { print (b > 0 ? a / b : 0) }')")
    echo "shared run $run: one output: $line1; two outputs: $line2" >&2
  done
  o=$(printf '%s\n' "${one[@]}" | median)
  t=$(printf '%s\n' "${two[@]}" | median)
  p=$(printf '%s\n' "${pairs[@]}" | median)
  shared_row=$(awk -v o="$o" -v t="$t" -v p="$p" 'BEGIN { printf "%-22s %9.3f %9.3f %7.2f %7.2f", "720p live, 2 outputs", t, o, (o > 0 ? t / o : 0), p }')
fi

if ((${#rows[@]})); then
  echo "record benchmark: $seconds s of 30 fps testsrc2 per input ($((5 * seconds)) s of MJPEG), $runs runs each, $threads encoder thread(s); medians"
  echo "  capctl record --video file:IN --no-realtime --video-codec h264 --preset ultrafast --crf 23 --threads $threads --min-free-space 0 out.mp4"
  echo "  ffmpeg -y -i IN -c:v libx264 -preset ultrafast -crf 23 -threads $threads -pix_fmt yuv420p out.mp4"
  echo "  MJPEG: capctl record --video file:IN --no-realtime --video-codec copy --min-free-space 0 out.mp4 / ffmpeg -y -i IN -c copy out.mp4"
  printf '%-22s %9s %9s %7s %7s %11s %11s %7s\n' "case" "capctl s" "ffmpeg s" "ratio" "paired" "capctl MiB" "ffmpeg MiB" "ratio"
  printf '%s\n' "${rows[@]}"
fi
if [[ -n ${shared_row:-} ]]; then
  echo "shared encoder: CPU seconds of one session recording to two MovieFileOutputs vs. one (target <= 1.15)"
  echo "  capctl-bench session $((30 * seconds)) DIR 2 / capctl-bench session $((30 * seconds)) DIR 1"
  printf '%-22s %9s %9s %7s %7s\n' "case" "two s" "one s" "ratio" "paired"
  echo "$shared_row"
fi
