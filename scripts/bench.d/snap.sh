#!/usr/bin/env bash
# Time to a photo: process start to JPEG file, capctl snap vs ffmpeg (and fswebcam) against vivid in the VM.
#
# Usage: scripts/bench snap [RUNS]   (default 7 runs of each)
#        CAPCTL_SNAP_ARGS="--warmup 0.5s" to time capctl with other options
#
# Boots the integration virtual machine (scripts/vm-integration) with a one-off
# guest script that, against vivid's capture node at 640x360 YUYV, alternates:
#   capctl snap --video DEV --size 640x360 --pixel-format YUYV --warmup 0 OUT.jpg
#   ffmpeg -f v4l2 -video_size 640x360 -input_format yuyv422 -i DEV -frames:v 1 OUT.jpg
#   fswebcam -d DEV -r 640x360 -p YUYV --no-banner -S 0 OUT.jpg   (when installed)
# Each run is timed from process start to exit with the output file in place
# (wall clock, CLOCK_MONOTONIC via date +%s%N). Both take the first frame
# (ffmpeg has no warm-up; capctl's default --warmup 0.5s is shown separately).
# Medians are compared; the target is capctl <= 0.7 x ffmpeg. Under software
# emulation (TCG) absolute times are far above a real machine's; the ratio is
# what counts.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-7}
scratch=${BENCH_SCRATCH:-.build-bench}
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

echo "building capctl (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
capctl=$(cd "$scratch/release" && pwd)/capctl

# A copy of the integration harness whose only test is the measurement.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scripts" "$work/Tests/Integration"
cp scripts/vm-integration "$work/scripts/"
cp Tests/Integration/run-all Tests/Integration/lib.sh "$work/Tests/Integration/"
cat >"$work/Tests/Integration/snap-bench.test.sh" <<'GUEST'
#!/usr/bin/env bash
source "$(dirname "$0")/lib.sh"
runs=${BENCH_RUNS:-7}
dev=$(vivid_node vid-cap)
v4l2-ctl -d "$dev" -v width=640,height=360,pixelformat=YUYV
# time_ms NAME OUT COMMAND...: milliseconds from start to exit; the file must exist
time_ms() {
  local name=$1 out=$2 start end
  shift 2
  rm -f "$out"
  start=$(date +%s%N)
  "$@" >/dev/null 2>"$name.err" || { cat "$name.err" >&2; fail "$name failed"; }
  end=$(date +%s%N)
  [[ -s $out ]] || fail "$name wrote no $out"
  echo $(((end - start) / 1000000))
}
# One untimed run of each first: the shared root's file cache fills.
"$CAPCTL" snap --video "$dev" --warmup 0 warm.jpg >/dev/null 2>&1 || true
ffmpeg -v error -nostdin -f v4l2 -i "$dev" -frames:v 1 -y warm2.jpg >/dev/null 2>&1 || true
for ((run = 1; run <= runs; run++)); do
  c=$(time_ms capctl c.jpg "$CAPCTL" snap --video "$dev" --size 640x360 --pixel-format YUYV --warmup 0 $BENCH_CAPCTL_ARGS c.jpg)
  d=$(time_ms capctl-default d.jpg "$CAPCTL" snap --video "$dev" --size 640x360 --pixel-format YUYV d.jpg)
  f=$(time_ms ffmpeg f.jpg ffmpeg -v error -nostdin -f v4l2 -video_size 640x360 -input_format yuyv422 -i "$dev" -frames:v 1 -y f.jpg)
  w=-
  if command -v fswebcam >/dev/null; then
    w=$(time_ms fswebcam w.jpg fswebcam -q -d "$dev" -r 640x360 -p YUYV --no-banner -S 0 w.jpg)
  fi
  echo "run $run: capctl $c ms, capctl-default-warmup $d ms, ffmpeg $f ms, fswebcam $w ms" | tee -a "$RESULTS/snap-bench.txt"
done
GUEST
chmod +x "$work/Tests/Integration/snap-bench.test.sh"
# The guest gets its settings through the test script itself.
sed -i "2i BENCH_RUNS=$runs; BENCH_CAPCTL_ARGS='${CAPCTL_SNAP_ARGS:-}'" "$work/Tests/Integration/snap-bench.test.sh"

results=$work/results
CAPCTL=$capctl VM_RESULTS=$results VM_TEST_TIMEOUT=${VM_TEST_TIMEOUT:-600} "$work/scripts/vm-integration" snap-bench >&2 ||
  { cat "$results/logs/snap-bench.log" >&2 2>/dev/null; exit 1; }
cat "$results/snap-bench.txt" >&2

source scripts/bench.d/common.bash
column() { sed -n "s/.* $1 \([0-9]*\) ms.*/\1/p" "$results/snap-bench.txt" | median; }
capctl_ms=$(column capctl)
default_ms=$(column capctl-default-warmup)
ffmpeg_ms=$(column ffmpeg)
fswebcam_ms=$(column fswebcam)
ratio=$(awk -v c="$capctl_ms" -v f="$ffmpeg_ms" 'BEGIN { printf "%.2f", c / f }')

echo "snap benchmark: process start to JPEG file, vivid 640x360 YUYV in the VM (TCG), $runs runs each, medians"
echo "  capctl snap --warmup 0          ${capctl_ms} ms"
echo "  capctl snap (default warmup)    ${default_ms} ms"
echo "  ffmpeg -frames:v 1              ${ffmpeg_ms} ms"
[[ -n $fswebcam_ms ]] && echo "  fswebcam -S 0                   ${fswebcam_ms} ms"
echo "  ratio capctl/ffmpeg             ${ratio} (target at most 0.7)"
