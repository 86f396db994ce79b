#!/usr/bin/env bash
# Disk space: --min-free-space stops a recording on a small tmpfs before it fills, with a
# finalized file; with the check off (--min-free-space 0) the disk fills: exit status 74,
# reason error, and the file is readable up to its last fragment.
source "$(dirname "$0")/lib.sh"
need ffprobe ffmpeg

node=$(vivid_capture_node)
mkdir small full
mount -t tmpfs -o size=3m tmpfs small
mount -t tmpfs -o size=1m tmpfs full
trap 'umount small full 2>/dev/null || true' EXIT

note "min free space on a 3 MiB tmpfs"
assert_ok "$CAPCTL" record --video "$node" --size 640x360 --video-codec mjpeg --fragment-interval 0.5 \
  --min-free-space 1MiB --max-duration 5m --progress json small/out.mp4
assert_eq '"min-free-space"' "$(event_field last.stdout finished reason)"
free=$(df -B1 --output=avail small | tail -1)
note "free space left: $free bytes"
((free >= 1048576 - 65536)) || fail "only $free bytes left; the limit was 1 MiB"
assert_eq "$(event_field last.stdout finished frames)" "$(frame_count small/out.mp4)"
assert_ok ffmpeg -v error -xerror -i small/out.mp4 -f null -

note "a disk that fills anyway"
assert_exit 74 "$CAPCTL" record --video "$node" --size 640x360 --video-codec mjpeg --fragment-interval 0.5 \
  --min-free-space 0 --max-duration 5m --progress json full/out.mp4
assert_one_line_stderr
assert_stderr_contains "full/out.mp4"
assert_eq '"error"' "$(event_field last.stdout finished reason)"
assert_eq 74 "$(event_field last.stdout finished exitStatus)"
frames=$(frame_count full/out.mp4)
note "full/out.mp4: $(stat -c %s full/out.mp4) bytes, $frames frames readable"
((frames >= 1)) || fail "nothing readable in the file that filled the disk"
assert_ok "$CAPCTL" info full/out.mp4
