#!/usr/bin/env bash
# Loop recording on a real full disk: with --on-low-space rotate, segments on a 2 MiB tmpfs
# with a 1 MiB floor go on well past what the volume holds, deleting the oldest segments as
# the floor comes; every file written is either there (and plays, with the frames its
# segment event gave) or named by a file-deleted event (low-space), oldest first; other
# files are left alone, and the free space never falls far below the floor. With only the
# file being written left to delete, the floor stops the recording as without rotate.
source "$(dirname "$0")/lib.sh"
need ffprobe ffmpeg python3

node=$(vivid_capture_node)
mkdir disk last
mount -t tmpfs -o size=2m tmpfs disk
mount -t tmpfs -o size=2m tmpfs last
trap 'umount disk last 2>/dev/null || true' EXIT

free_bytes() { df -B1 --output=avail "$1" | tail -1 | tr -d ' '; }

rotates_past_a_full_disk() {
  echo "not the recording's" >disk/notes.txt
  echo "not the recording's either" >disk/seg-01.mp4
  # The free space, every 0.2 s while recording; the least is kept.
  (while :; do free_bytes disk; sleep 0.2; done) >free.log &
  local sampler=$!
  assert_ok "$CAPCTL" record --video "$node" --size 640x360 --video-codec mjpeg --fragment-interval 0.5 \
    --segment-duration 2 --min-free-space 1MiB --on-low-space rotate --max-duration 60 --progress json 'disk/seg-%n.mp4'
  kill "$sampler"
  wait "$sampler" 2>/dev/null || true
  cp last.stdout events.json
  assert_eq '"max-duration"' "$(event_field events.json finished reason)"
  local written least
  written=$(event_field events.json finished bytes)
  least=$(sort -n free.log | head -1)
  note "$written bytes written on a 2 MiB volume; least free space seen $least bytes, at the end $(free_bytes disk)"
  # More than the volume holds above its floor: without deleting, the floor would have
  # stopped it. (How much more depends on how fast the machine encodes MJPEG: under
  # emulation 2.3 MB were written in the 60 s, with or without a busy host beside it;
  # the volume is small enough that a machine half as fast still fills it twice.)
  ((written > 2 * 1048576 - 1048576)) || fail "only $written bytes written: the disk never filled"
  ((least >= 1048576 - 262144)) || fail "free space fell to $least bytes; the floor was 1 MiB"
  (($(free_bytes disk) >= 1048576 - 65536)) || fail "only $(free_bytes disk) bytes left; the floor was 1 MiB"
  assert_eq "not the recording's" "$(cat disk/notes.txt)"
  assert_eq "not the recording's either" "$(cat disk/seg-01.mp4)"
  python3 - events.json disk <<'PY'
import json, os, subprocess, sys
path, folder = sys.argv[1:3]
events = [json.loads(line) for line in open(path) if line.startswith("{")]
segments = [e for e in events if e["event"] == "segment"]
deleted = [e for e in events if e["event"] == "file-deleted"]
finished = events[-1]
written = [e["file"] for e in segments]
gone = [e["file"] for e in deleted]
assert gone, "nothing was deleted"
assert all(e["reason"] == "low-space" for e in deleted), deleted
assert gone == written[:len(gone)], f"not the oldest first: {gone} of {written}"
left = sorted(f for f in os.listdir(folder) if f.startswith("seg-") and f != "seg-01.mp4")
kept = written[len(gone):]
assert sorted(os.path.basename(f) for f in kept) == left, f"{left} on disk, {kept} not deleted"
assert [os.path.basename(f) for f in finished["files"]] == [os.path.basename(f) for f in kept], finished["files"]
assert finished["deletedFiles"] == len(gone)
assert finished["deletedBytes"] == sum(e["bytes"] for e in deleted)
assert finished["bytes"] == sum(e["bytes"] for e in segments)
sizes = {e["file"]: e["bytes"] for e in segments}
for e in deleted:
    assert e["bytes"] == sizes[e["file"]], e
for e in segments[len(gone):]:
    frames = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                             "stream=nb_read_frames", "-of", "csv=p=0", e["file"]], capture_output=True, text=True).stdout.strip()
    assert frames == str(e["frames"]), f'{e["file"]}: {frames} frames, {e["frames"]} reported'
print(f"{len(written)} files written, {len(gone)} deleted, {len(kept)} left: {' '.join(left)}", file=sys.stderr)
PY
}

stops_with_only_the_current_file_left() {
  # An earlier run's file of the template, taking half the volume.
  head -c 1000000 /dev/zero >last/cam-1.mp4
  assert_ok "$CAPCTL" record --video "$node" --size 640x360 --video-codec mjpeg --fragment-interval 0.5 \
    --segment-duration 5m --min-free-space 1MiB --on-low-space rotate --max-duration 5m --progress json 'last/cam-%n.mp4'
  assert_eq '"min-free-space"' "$(event_field last.stdout finished reason)"
  assert_eq '"last/cam-1.mp4"' "$(event_field last.stdout file-deleted file)"
  assert_eq '"low-space"' "$(event_field last.stdout file-deleted reason)"
  assert_eq '["last/cam-2.mp4"]' "$(event_field last.stdout finished files | tr -d ' ')"
  assert_eq "$(event_field last.stdout finished frames)" "$(frame_count last/cam-2.mp4)"
  (($(free_bytes last) >= 1048576 - 65536)) || fail "only $(free_bytes last) bytes left; the floor was 1 MiB"
}

check "rotate goes on past a full disk, deleting only the oldest segments" rotates_past_a_full_disk
check "rotate stops once only the file being written is left" stops_with_only_the_current_file_left
checks_done
