#!/usr/bin/env bash
# Faults vivid injects during a recording: buffers it drops are counted and reported;
# while recording the camera is locked for configuration (another program's control change
# and a second recording are refused); its disconnect ends the recording with reason device-disconnected and status 69, the
# file finalized and playable.
source "$(dirname "$0")/lib.sh"
need v4l2-ctl ffmpeg ffprobe

node=$(vivid_capture_node)

note "dropped buffers are reported"
assert_ok v4l2-ctl -d "$node" --set-ctrl=percentage_of_dropped_buffers=50
assert_ok "$CAPCTL" record --video "$node" --size 320x180 --max-duration 3 --progress json drop.mp4
cp last.stdout drop.out
v4l2-ctl -d "$node" --set-ctrl=percentage_of_dropped_buffers=0
dropped=$(event_field drop.out finished dropped)
device=$(event_field drop.out finished droppedByDevice)
note "dropped $dropped (by the device: $device), frames $(event_field drop.out finished frames)"
((dropped > 0)) || { show_last; fail "vivid dropped half the buffers; capctl reports $dropped"; }
((device > 0)) || fail "the drops are not counted as the device's ($device)"
# No audio was recorded: every sample dropped is a video frame.
assert_eq "$(event_field drop.out finished droppedFrames)" "$dropped"
assert_eq "$(event_field drop.out finished droppedAudioSamples)" 0
assert_eq "$(event_field drop.out finished frames)" "$(frame_count drop.mp4)"

note "the configuration lock while recording"
"$CAPCTL" record --video "$node" --size 320x180 --progress json --progress-interval 0.2 locked.mp4 >locked.out 2>locked.err &
pid=$!
wait_record_event locked.out progress 30 'e["frames"] >= 2'
run v4l2-ctl -d "$node" --set-ctrl=brightness=20
assert_ne 0 "$LAST_STATUS" "v4l2-ctl status while the camera records"
assert_exit 69 "$CAPCTL" record --video "$node" --max-duration 1 second.mp4
assert_stderr_contains "process $pid"
[[ ! -e second.mp4 ]] || fail "a refused recording created its file"
kill -INT "$pid"
status=0
wait "$pid" || status=$?
assert_eq 0 "$status" "exit status of the recording that held the lock"

note "disconnect during a recording"
# While record holds the configuration lock, no other program may change a control:
# the fault is injected through the same control, so this recording leaves it free.
"$CAPCTL" record --video "$node" --size 320x180 --progress json --progress-interval 0.2 --no-lock gone.mp4 >gone.out 2>gone.err &
pid=$!
wait_record_event gone.out progress 30 'e["frames"] >= 3'
assert_ok v4l2-ctl -d "$node" --set-ctrl=disconnect=1
status=0
wait "$pid" || status=$?
cat gone.err >&2
assert_eq 69 "$status" "exit status after the device went away"
assert_eq '"device-disconnected"' "$(event_field gone.out finished reason)"
assert_eq 69 "$(event_field gone.out finished exitStatus)"
frames=$(event_field gone.out finished frames)
((frames >= 3)) || fail "only $frames frames"
assert_eq "$frames" "$(frame_count gone.mp4)" "frames in the finalized file"
assert_ok ffmpeg -v error -xerror -i gone.mp4 -f null -
# vivid comes back on the same node once every handle is closed.
wait_until 20 test -e "$node"
