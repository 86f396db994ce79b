#!/usr/bin/env bash
# A 1-hour loop recording simulated fast (10 s segments, --keep-size 20M): peak folder size, files deleted, capctl's RSS at start and end.
#
# Usage: scripts/bench loop [MINUTES]   (default 60 minutes of media)
#        CAPCTL=PATH                 the capctl to measure (default .build/release/capctl, else .build/debug/capctl)
#        CAPCTL_BENCH_KEEP=SIZE      the --keep-size bound (default 20M)
#        CAPCTL_BENCH_SEGMENT=TIME   the --segment-duration (default 10s)
#
# The input is a 60 s clip of ffmpeg's testsrc2 (320x240 at 30 fps, H.264 at 1 Mb/s, a
# keyframe every 30 frames, no B-frames), looped by ffmpeg (-stream_loop, copied) into a
# Matroska file of MINUTES. capctl replays it as a camera as fast as it reads and copies
# its frames, so the hour takes seconds to minutes and the disk, not an encoder, sets the pace:
#   capctl record --video file:IN --no-realtime --video-codec copy --segment-duration 10s \
#     --keep-size 20M --min-free-space 0 --progress json --progress-interval 0.1 'loop-%4n.mp4'
# While it runs, every 20 ms: the folder's size (the sum of its files' sizes) and capctl's
# VmRSS (/proc/PID/status).
#
# Reported:
#   media        the media time recorded, and the wall time it took
#   written      bytes written (finished's bytes), files written (segment events)
#   deleted      files deleted (file-deleted events; finished's deletedFiles) and their bytes
#   left         the files left and their size (at most the bound: the finished files must fit)
#   folder peak  the largest folder size seen (the bound, the file being written, and for the
#                moment a segment ends the one just finished)
#   RSS          capctl's resident memory once the first segment was finished ("start"),
#                at the last progress event ("end"), and its peak
# The run fails unless capctl exits 0 with every file it wrote either left (and listed in
# finished's files) or deleted.
set -euo pipefail
cd "$(dirname "$0")/../.."
minutes=${1:-60}
keep=${CAPCTL_BENCH_KEEP:-20M}
segment=${CAPCTL_BENCH_SEGMENT:-10s}
if [[ -n ${CAPCTL:-} ]]; then
  capctl=$CAPCTL
elif [[ -x .build/release/capctl ]]; then
  capctl=.build/release/capctl
else
  capctl=.build/debug/capctl
fi
[[ -x $capctl ]] || { echo "bench: no capctl at $capctl (build it, or set CAPCTL)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "bench: ffmpeg is needed (scripts/setup installs it)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 is needed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/capctl-bench-loop.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/out"

echo "making the input ($minutes min of 320x240 H.264)..." >&2
ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=320x240:rate=30" -t 60 -c:v libx264 -preset ultrafast -b:v 1M \
  -maxrate 1M -bufsize 1M -g 30 -bf 0 -pix_fmt yuv420p "$work/clip.mkv"
ffmpeg -v error -nostdin -stream_loop -1 -i "$work/clip.mkv" -t "$((minutes * 60))" -c copy "$work/input.mkv"

echo "recording with $capctl..." >&2
python3 - "$work/out" "$capctl" record --video "file:$work/input.mkv" --no-realtime --video-codec copy \
  --segment-duration "$segment" --keep-size "$keep" --min-free-space 0 --progress json --progress-interval 0.1 \
  "$work/out/loop-%4n.mp4" <<'PY'
import json, os, subprocess, sys, threading, time

folder, command = sys.argv[1], sys.argv[2:]
start = time.monotonic()
proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=open(os.path.join(folder, "..", "stderr.txt"), "w"), text=True)
samples = []            # (seconds, folder bytes, rss KiB)
marks = {}              # event name -> index in samples when it first came (last for progress)
lock = threading.Lock()

def rss():
    try:
        with open(f"/proc/{proc.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None

def folder_bytes():
    total = 0
    for entry in os.scandir(folder):
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except FileNotFoundError:
            pass
    return total

def sample():
    while proc.poll() is None:
        memory = rss()
        with lock:
            samples.append((time.monotonic() - start, folder_bytes(), memory))
        time.sleep(0.02)

sampler = threading.Thread(target=sample)
sampler.start()
events = []
for line in proc.stdout:
    try:
        event = json.loads(line)
    except ValueError:
        continue
    events.append(event)
    name = event.get("event")
    memory = rss()
    with lock:
        samples.append((time.monotonic() - start, folder_bytes(), memory))
        if name == "segment" and "segment" not in marks:
            marks["segment"] = len(samples) - 1
        if name == "progress":
            marks["progress"] = len(samples) - 1
status = proc.wait()
wall = time.monotonic() - start
sampler.join()
if status != 0:
    sys.exit(f"bench: capctl exited with {status}: " + open(os.path.join(folder, "..", "stderr.txt")).read())

finished = events[-1]
segments = [e for e in events if e["event"] == "segment"]
deleted = [e for e in events if e["event"] == "file-deleted"]
left = sorted(os.listdir(folder))
written = [os.path.basename(e["file"]) for e in segments]
gone = {os.path.basename(e["file"]) for e in deleted}
assert finished["event"] == "finished", finished
assert sorted(set(written) - gone) == left, f"files left {left} are not those written and not deleted"
assert sorted(os.path.basename(f) for f in finished["files"]) == left
assert finished["deletedFiles"] == len(deleted)
left_bytes = sum(os.path.getsize(os.path.join(folder, name)) for name in left)
memory = [s[2] for s in samples if s[2] is not None]
peak_folder = max(s[1] for s in samples)
mib = lambda n: n / 1048576
print(f"capctl       {command[0]}")
print(f"media        {finished['duration']:.1f} s in {wall:.1f} s of wall time ({finished['duration'] / wall:.0f}x real time)")
print(f"written      {finished['bytes']} bytes ({mib(finished['bytes']):.1f} MiB) in {len(segments)} files")
print(f"deleted      {len(deleted)} files, {finished['deletedBytes']} bytes ({mib(finished['deletedBytes']):.1f} MiB)")
print(f"left         {len(left)} files, {left_bytes} bytes ({mib(left_bytes):.2f} MiB)")
print(f"folder peak  {peak_folder} bytes ({mib(peak_folder):.2f} MiB), sampled {len(samples)} times")
start_rss = samples[marks["segment"]][2] if "segment" in marks else None
end_rss = samples[marks["progress"]][2] if "progress" in marks else None
print(f"RSS          start {start_rss} KiB, end {end_rss} KiB, peak {max(memory)} KiB")
PY
