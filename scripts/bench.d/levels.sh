#!/usr/bin/env bash
# Audio level meter: CPU time per second of 48 kHz stereo audio (s16, s32, f32) vs. ffmpeg's astats.
#
# Usage: scripts/bench levels [SECONDS] [RUNS]   (defaults: 3600 s of audio, 5 runs of each format)
#
# capctl-bench meters SECONDS of 48 kHz stereo audio in 20 ms buffers (960 frames, as a
# microphone delivers them), with an interval reader (read once a second, as progress
# does) and a silence monitor attached, as `record` attaches them; the CPU time (user +
# system, getrusage) is the meter's alone. For reference, ffmpeg's astats filter measuring
# peak and RMS per channel on a WAV of the same audio (s16): the CPU time of `ffmpeg -af
# astats` less that of reading and discarding the same file. The figure is the median,
# in microseconds of CPU per second of audio, and as a share of one core.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-3600}
runs=${2:-5}
scratch=${BENCH_SCRATCH:-.build-bench}

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time is missing (scripts/setup installs the 'time' package)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "bench: ffmpeg is missing (scripts/setup installs it)" >&2; exit 1; }

echo "building capctl-bench (release)..." >&2
swift build -c release --product capctl-bench --scratch-path "$scratch" >&2
bench="$scratch/release/capctl-bench"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/bench.d/common.bash

# per_second CPU_SECONDS AUDIO_SECONDS: microseconds of CPU per second of audio, and percent of a core
per_second() { awk -v c="$1" -v s="$2" 'BEGIN { printf "%8.1f us/s  %7.4f%% of a core", c / s * 1e6, c / s * 100 }'; }

echo "capctl's meter, ${seconds} s of 48 kHz stereo in 20 ms buffers, median of $runs runs:"
for format in s16 s32 f32; do
  times=()
  for ((run = 1; run <= runs; run++)); do
    line=$("$bench" levels "$seconds" "$format")
    times+=("${line##* }")
  done
  cpu=$(printf '%s\n' "${times[@]}" | median)
  printf '  %-4s %s  (%.3f s CPU for %s s)\n' "$format" "$(per_second "$cpu" "$seconds")" "$cpu" "$seconds"
done

# ffmpeg: a shorter file (it is read from disk), the same audio.
file_seconds=$((seconds < 600 ? seconds : 600))
ffmpeg -v error -nostdin -f lavfi -i "sine=frequency=1000:sample_rate=48000" -t "$file_seconds" -ac 2 -c:a pcm_s16le "$work/tone.wav"
with=() without=()
for ((run = 1; run <= runs; run++)); do
  result=$(measure ffmpeg -v error -nostdin -i "$work/tone.wav" \
    -af "astats=measure_overall=none:measure_perchannel=Peak_level+RMS_level:reset=50" -f null -)
  with+=("${result% *}")
  result=$(measure ffmpeg -v error -nostdin -i "$work/tone.wav" -f null -)
  without+=("${result% *}")
done
astats=$(awk -v a="$(printf '%s\n' "${with[@]}" | median)" -v b="$(printf '%s\n' "${without[@]}" | median)" 'BEGIN { d = a - b; printf "%.3f", d < 0 ? 0 : d }')
echo "ffmpeg's astats (peak and RMS per channel), ${file_seconds} s of s16 from a WAV, less reading it:"
printf '  s16  %s  (%.3f s CPU for %s s)\n' "$(per_second "$astats" "$file_seconds")" "$astats" "$file_seconds"
