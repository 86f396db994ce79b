#!/usr/bin/env bash
# The demo (scripts/demo --vm) as a test, end to end against the real drivers:
# list the devices, record 3 s from vivid and snd-aloop, inspect the file, take
# a frame and a photo; the recording holds an H.264 and an AAC track.
source "$(dirname "$0")/lib.sh"
node=$(vivid_capture_node)
"$CAPCTL" list-devices
"$CAPCTL" record --video "$node" --audio hw:Loopback,1,0 --max-duration 3 --progress text recording.mp4
"$CAPCTL" info recording.mp4
"$CAPCTL" frame recording.mp4 --at 1.5 -o frame.png
"$CAPCTL" snap --video "$node" photo.jpg
ls -l recording.mp4 frame.png photo.jpg
run "$CAPCTL" info --json recording.mp4
assert_eq 0 "$LAST_STATUS" "info"
assert_contains "$LAST_STDOUT" '"h264"' "video track"
assert_contains "$LAST_STDOUT" '"aac"' "audio track"
cp recording.mp4 frame.png photo.jpg "$RESULTS/"
