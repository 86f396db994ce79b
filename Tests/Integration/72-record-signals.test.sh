#!/usr/bin/env bash
# Signals on a recording from vivid: SIGINT finalizes a playable file (status 0), SIGHUP
# goes on in the next file (OUT-2) with no frame lost, SIGUSR1 and SIGUSR2 leave the paused
# time out of the file, SIGKILL leaves a file readable up to its last fragment.
source "$(dirname "$0")/lib.sh"
need ffprobe ffmpeg

node=$(vivid_capture_node)

note "SIGINT finalizes"
"$CAPCTL" record --video "$node" --size 320x180 --no-fragments --progress json --progress-interval 0.2 int.mp4 >int.out 2>int.err &
pid=$!
wait_record_event int.out progress 30 'e["frames"] >= 3'
kill -INT "$pid"
status=0
wait "$pid" || status=$?
assert_eq 0 "$status" "exit status after SIGINT"
assert_eq '"stopped"' "$(event_field int.out finished reason)"
assert_eq "$(event_field int.out finished frames)" "$(frame_count int.mp4)"
assert_ok ffmpeg -v error -xerror -i int.mp4 -f null -

note "SIGHUP switches to the next file"
"$CAPCTL" record --video "$node" --size 320x180 --max-duration 5 --progress json --progress-interval 0.2 hup.mp4 >hup.out 2>hup.err &
pid=$!
wait_record_event hup.out progress 30 'e["duration"] >= 1'
kill -HUP "$pid"
wait_record_event hup.out segment 10 'e["file"] == "hup.mp4"'
status=0
wait "$pid" || status=$?
assert_eq 0 "$status" "exit status after the limit"
assert_eq '["hup.mp4", "hup-2.mp4"]' "$(event_field hup.out finished files)"
first=$(frame_count hup.mp4)
second=$(frame_count hup-2.mp4)
note "hup.mp4: $first frames, hup-2.mp4: $second frames"
first_event=$(python3 -c 'import json, sys
print(next(e["frames"] for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "segment" and e.get("file") == "hup.mp4"))' hup.out)
assert_eq "$first_event" "$first" "frames of the first file"
assert_eq "$(event_field hup.out finished frames)" "$((first + second))" "frames of both files"
assert_ok ffmpeg -v error -xerror -i hup-2.mp4 -f null -

note "pause and resume"
"$CAPCTL" record --video "$node" --size 320x180 --max-duration 3 --progress json --progress-interval 0.2 pause.mp4 >pause.out 2>pause.err &
pid=$!
wait_record_event pause.out progress 30 'e["duration"] >= 1'
kill -USR1 "$pid"
wait_record_event pause.out paused 10
sleep 3
kill -USR2 "$pid"
wait_record_event pause.out resumed 10
status=0
wait "$pid" || status=$?
assert_eq 0 "$status" "exit status after the limit"
assert_eq '"max-duration"' "$(event_field pause.out finished reason)"
duration=$(stream_duration pause.mp4 video)
gap=$(largest_gap pause.mp4)
note "pause.mp4: $duration s, largest gap between frames $gap s"
within "$duration" 3 0.5 || fail "pause.mp4 lasts $duration s; 3 s were recorded around a 3 s pause"
awk -v g="$gap" 'BEGIN { exit !(g < 1.5) }' || fail "a $gap s gap: the pause is in the file"

note "SIGKILL leaves a readable file"
"$CAPCTL" record --video "$node" --size 320x180 --fragment-interval 0.5 --progress json --progress-interval 0.2 kill.mp4 >kill.out 2>kill.err &
pid=$!
wait_record_event kill.out progress 60 'e["duration"] >= 2.5'
kill -KILL "$pid"
wait "$pid" || true
frames=$(frame_count kill.mp4)
note "kill.mp4: $frames frames readable"
((frames >= 3)) || fail "only $frames frames readable after SIGKILL"
assert_ok ffmpeg -v error -i kill.mp4 -f null -
assert_ok "$CAPCTL" info kill.mp4
