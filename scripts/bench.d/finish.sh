#!/usr/bin/env bash
# Finishing a 1 GiB MP4 recording: wall time and bytes written, regular MP4 at the end vs --fragments-only.
#
# Usage: scripts/bench finish [RUNS]   (default 3 runs of each; or CAPCTL_BENCH_RUNS=N)
#        CAPCTL=PATH             the capctl to measure (default .build/release/capctl, else .build/debug/capctl)
#        CAPCTL_BENCH_MIB=N      size of the input in MiB (default 1024)
#
# The input is 1080p30 H.264 made once with ffmpeg (testsrc2, libx264 ultrafast, QP 5,
# a keyframe every 30 frames, no B-frames) into a Matroska file cut at 1 GiB (-fs).
# capctl replays it as a camera as fast as it reads (--no-realtime) and copies its frames:
#   capctl record --video file:IN --no-realtime --video-codec copy --json --progress-interval 0.25 OUT.mp4
# once as it is by default (fragments while recording, a regular MP4 at a clean finish)
# and once with --fragments-only (the fragmented file is kept), alternating, RUNS times each,
# after one untimed run of each.
# Before every run the output is removed and `sync` empties the page cache of dirty pages.
#
# Per run:
#   wall     seconds from start to exit of the whole command (CLOCK_MONOTONIC).
#   cpu      user + system CPU seconds of the process (its rusage); on a shared machine
#            steadier than the wall time.
#   tail     seconds from the last progress event on stdout (read line by line as it
#            comes) to exit: the end of the recording, including the finishing step.
#   wchar    bytes the process passed to write()/pwrite() and the like, and
#   written  bytes it dirtied in the page cache (write_bytes, counted when dirtied,
#            so writeback does not delay it), both from the difference of the measuring
#            process's /proc/self/io before and after it reaps capctl (a reaped child's
#            I/O counts are added to its parent's). A second copy of the media
#            would add about the file's size to both.
# After each --fragments-only run, `capctl repair --json` converts that finished fragmented
# file in place (the same conversion as a clean finish), measured the same way: the
# finishing step alone.
# Each output is checked: ffprobe counts (-count_packets, one packet a frame) as many
# video frames as the input holds and capctl's finished event reports; the regular
# files' top-level boxes are ftyp, free, one mdat holding nearly all of the file, moov;
# the fragmented file's are ftyp, moov, moof/mdat pairs (and an mfra).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-${CAPCTL_BENCH_RUNS:-3}}
mib=${CAPCTL_BENCH_MIB:-1024}
if [[ -n ${CAPCTL:-} ]]; then
  capctl=$CAPCTL
elif [[ -x .build/release/capctl ]]; then
  capctl=.build/release/capctl
else
  capctl=.build/debug/capctl
fi
[[ -x $capctl ]] || { echo "bench: no capctl at $capctl (build it, or set CAPCTL)" >&2; exit 1; }
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null ||
  { echo "bench: ffmpeg and ffprobe are needed (scripts/setup installs them)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is needed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/capctl-bench-finish.XXXXXX")
trap 'rm -rf "$work"' EXIT

# measure.py COMMAND...: runs it with stdout read line by line; prints
# "WALL TAIL CPU WCHAR WRITTEN FRAMES EXIT" (TAIL and FRAMES are - without progress or finished events).
cat >"$work/measure.py" <<'PY'
import json, os, subprocess, sys, time
def io():
    with open("/proc/self/io") as f:
        return {k: int(v) for k, v in (line.split(":") for line in f)}
before = io()
start = time.monotonic()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=open(sys.argv[0] + ".err", "w"))
last_progress, frames = None, "-"
for line in proc.stdout:
    now = time.monotonic()
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("event") == "progress":
        last_progress = now
    elif event.get("event") == "finished":
        frames = event.get("frames", "-")
_, status, usage = os.wait4(proc.pid, 0)
end = time.monotonic()
status = os.waitstatus_to_exitcode(status)
after = io()
tail = "-" if last_progress is None else "%.3f" % (end - last_progress)
print("%.3f %s %.3f %d %d %s %d" % (end - start, tail, usage.ru_utime + usage.ru_stime,
      after["wchar"] - before["wchar"], after["write_bytes"] - before["write_bytes"], frames, status))
PY

# boxes.py FILE: the file's top-level box types on one line, then the largest mdat's share of the file.
cat >"$work/boxes.py" <<'PY'
import os, struct, sys
path = sys.argv[1]
end = os.path.getsize(path)
types, largest, pos = [], 0, 0
with open(path, "rb") as f:
    while pos < end:
        f.seek(pos)
        head = f.read(16)
        size, kind = struct.unpack(">I4s", head[:8])
        if size == 1:
            size = struct.unpack(">Q", head[8:16])[0]
        elif size == 0:
            size = end - pos
        if size < 8:
            types.append("BAD")
            break
        kind = kind.decode("latin-1")
        if kind == "mdat":
            largest = max(largest, size)
        # Runs of fragments are shown once: moof mdat moof mdat ... -> (moof mdat)*N
        types.append(kind)
        pos += size
collapsed, i = [], 0
while i < len(types):
    if types[i:i + 2] == ["moof", "mdat"]:
        n = 0
        while types[i:i + 2] == ["moof", "mdat"]:
            n, i = n + 1, i + 2
        collapsed.append("(moof mdat)x%d" % n)
    else:
        collapsed.append(types[i])
        i += 1
print(" ".join(collapsed))
print("%.4f" % (largest / end if end else 0))
PY

input=$work/input.mkv
echo "making a ${mib} MiB input (1080p30 H.264, QP 5)..." >&2
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t 36000 \
  -c:v libx264 -preset ultrafast -qp 5 -g 30 -bf 0 -pix_fmt yuv420p -fs "$((mib * 1024 * 1024))" "$input"
input_bytes=$(stat -c %s "$input")
awk -v b="$input_bytes" -v m="$mib" 'BEGIN { exit !(b > 0.95 * m * 1048576 && b < 1.15 * m * 1048576) }' ||
  { echo "bench: the input is $input_bytes bytes, not about $mib MiB" >&2; exit 1; }
packets() { ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$1"; }
input_frames=$(packets "$input")
echo "input: $input_bytes bytes, $input_frames frames" >&2

failures=()
# verify FILE KIND FRAMES: KIND regular or fragmented; FRAMES what capctl reported (- for repair).
verify() {
  local file=$1 kind=$2 reported=$3 counted layout share
  counted=$(packets "$file")
  { read -r layout; read -r share; } < <(python3 "$work/boxes.py" "$file")
  local problem=""
  [[ $counted == "$input_frames" ]] || problem+=" ffprobe counts $counted frames, the input $input_frames;"
  [[ $reported == - || $reported == "$input_frames" ]] || problem+=" capctl reported $reported frames;"
  if [[ $kind == regular ]]; then
    [[ $layout =~ ^ftyp(\ free)*\ mdat\ moov$ ]] || problem+=" top-level boxes: $layout;"
    awk -v s="$share" 'BEGIN { exit !(s > 0.99) }' || problem+=" the mdat is only $share of the file;"
  else
    [[ $layout =~ ^ftyp\ moov\ \(moof\ mdat\)x[0-9]+(\ mfra)?$ ]] || problem+=" top-level boxes: $layout;"
  fi
  echo "  $kind $(stat -c %s "$file") bytes, $counted frames, boxes: $layout, largest mdat $share of the file" >&2
  [[ -z $problem ]] || failures+=("$file ($kind):$problem")
}

# run NAME OUT COMMAND...: one measured run into $results (NAME WALL TAIL CPU WCHAR WRITTEN FRAMES SIZE)
results=$work/results.txt
run() {
  local name=$1 out=$2 line
  shift 2
  sync
  line=$(python3 "$work/measure.py" "$@")
  [[ ${line##* } == 0 ]] || { echo "bench: failed ($line): $*" >&2; cat "$work/measure.py.err" >&2; exit 1; }
  line="$name ${line% *} $(stat -c %s "$out")"
  echo "$line" >>"$results"
  echo "$line" >&2
}

record=("$capctl" record --video "file:$input" --no-realtime --video-codec copy --json --progress-interval 0.25)
# One untimed run of each first: without it, the first timed recording after the input was
# made came out the slowest of its variant by up to twice (CPU time too).
for variant in "" --fragments-only; do
  # shellcheck disable=SC2086
  "${record[@]}" $variant "$work/warmup.mp4" >/dev/null 2>&1 || { echo "bench: the warm-up recording failed" >&2; exit 1; }
  rm -f "$work/warmup.mp4"
done
echo "runs: NAME WALL_S TAIL_S CPU_S WCHAR WRITTEN FRAMES SIZE" >&2
for ((i = 1; i <= runs; i++)); do
  rm -f "$work/hybrid.mp4"
  run hybrid "$work/hybrid.mp4" "${record[@]}" "$work/hybrid.mp4"
  verify "$work/hybrid.mp4" regular "$(awk '$1 == "hybrid" { f = $7 } END { print f }' "$results")"
  rm -f "$work/hybrid.mp4" "$work/fragments.mp4"
  run fragments-only "$work/fragments.mp4" "${record[@]}" --fragments-only "$work/fragments.mp4"
  verify "$work/fragments.mp4" fragmented "$(awk '$1 == "fragments-only" { f = $7 } END { print f }' "$results")"
  run repair "$work/fragments.mp4" "$capctl" repair --json "$work/fragments.mp4"
  verify "$work/fragments.mp4" regular -
  rm -f "$work/fragments.mp4"
done

source scripts/bench.d/common.bash
col() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$results" | median; }
hw=$(col hybrid 2) fw=$(col fragments-only 2) rw=$(col repair 2)
ht=$(col hybrid 3) ft=$(col fragments-only 3)
hu=$(col hybrid 4) fu=$(col fragments-only 4) ru=$(col repair 4)
hc=$(col hybrid 5) fc=$(col fragments-only 5) rc=$(col repair 5)
hb=$(col hybrid 6) fb=$(col fragments-only 6) rb=$(col repair 6)
size=$(col hybrid 8)
# Back to back pairs: hybrid run i minus fragments-only run i.
paired=$(paste <(awk '$1 == "hybrid" { print $2 }' "$results") <(awk '$1 == "fragments-only" { print $2 }' "$results") |
  awk '{ print $1 - $2 }' | median)

echo "finish benchmark: $input_frames frames of 1080p30 H.264 ($input_bytes bytes), $runs runs each, medians"
echo "  ${record[*]} [--fragments-only] OUT.mp4"
printf '  %-17s %8s %8s %8s %14s %14s\n' "" "wall s" "tail s" "cpu s" "wchar bytes" "written bytes"
printf '  %-17s %8.3f %8s %8.3f %14.0f %14.0f\n' "regular (default)" "$hw" "$ht" "$hu" "$hc" "$hb"
printf '  %-17s %8.3f %8s %8.3f %14.0f %14.0f\n' "--fragments-only" "$fw" "$ft" "$fu" "$fc" "$fb"
printf '  %-17s %8.3f %8s %8.3f %14.0f %14.0f\n' "repair (alone)" "$rw" "-" "$ru" "$rc" "$rb"
awk -v hw="$hw" -v fw="$fw" -v p="$paired" -v hu="$hu" -v fu="$fu" -v hc="$hc" -v fc="$fc" -v hb="$hb" -v fb="$fb" -v s="$size" 'BEGIN {
  printf "  regular - fragments-only: %+.3f s wall (medians), %+.3f s (median of back-to-back pairs); target under 1 s\n", hw - fw, p
  printf "                            %+.3f s CPU (medians)\n", hu - fu
  printf "  extra bytes written: wchar %+.0f (%.5f of the file), page cache %+.0f (%.5f of the file); a second copy would be about 1\n", hc - fc, (hc - fc) / s, hb - fb, (hb - fb) / s }'
if ((${#failures[@]})); then
  echo "verification FAILED:"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "verification: all $((3 * runs)) outputs have $input_frames frames and the expected boxes"
