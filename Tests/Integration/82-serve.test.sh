#!/usr/bin/env bash
# capctl serve on real drivers: vivid and the ALSA loopback (a tone played into it) stay
# open while recordings are started and stopped over HTTP (curl on 127.0.0.1): each file
# holds the frames and samples its events report, and its audio the tone; the camera's
# configuration lock is held while the service runs (another capctl is refused with 69)
# and released when SIGTERM ends it (status 0, every recording finished); controls set
# over HTTP go through that lock while another program stays locked out; a photo comes
# from the running camera, and its live view (GET /snapshot.jpg, /stream.mjpg read by
# ffmpeg) from the same open camera, scaled; a second service on the same camera is a
# one-line error with status 69.
source "$(dirname "$0")/lib.sh"
need curl ffprobe ffmpeg aplay python3

node=$(vivid_capture_node)
alsa_card Loopback >/dev/null
# The guest has no network but its loopback interface, which may start down.
ip link set lo up 2>/dev/null || true

ffmpeg -v error -f lavfi -i "sine=frequency=1000:sample_rate=48000" -t 60 -ac 2 -c:a pcm_s16le feed.wav
aplay -q -D hw:Loopback,0,0 feed.wav &
feeder=$!
mkdir rec
"$CAPCTL" serve --video "$node" --size 320x180 --audio hw:Loopback,1,0 --sample-rate 48000 --channels 2 \
  --listen 127.0.0.1:0 --dir rec >serve.out 2>serve.err &
service=$!
trap 'kill $feeder $service 2>/dev/null || true' EXIT
wait_record_event serve.out service-started 30
port=$(event_field serve.out service-started port)
api=http://127.0.0.1:$port
note "service on port $port"

# call METHOD PATH [BODY]: the response body; fails on a status other than 2xx
call() {
  curl -sS --fail-with-body -X "$1" ${3:+-H 'Content-Type: application/json' --data-binary "$3"} "$api$2" ||
    fail "$1 $2 failed: $(tail -2 serve.err)"
}
json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

note "the session lists the camera and the microphone"
session=$(call GET /session)
assert_contains "$session" "\"device\":\"$node\""
assert_contains "$session" '"device":"hw:Loopback,1,0"'

note "the camera is locked for configuration while the service runs"
assert_exit 69 "$CAPCTL" set "$node" brightness=20
assert_stderr_contains "process $service"

note "controls over HTTP go through the service's lock; others stay locked out"
controls=$(call GET /devices/0/controls)
assert_contains "$controls" '"name":"brightness"'
applied=$(call PATCH /devices/0/controls '{"brightness": 10}')
assert_contains "$applied" '"held":true'
assert_eq "brightness: 10" "$(v4l2-ctl -d "$node" --get-ctrl brightness)"
run v4l2-ctl -d "$node" --set-ctrl brightness=50
assert_eq "brightness: 10" "$(v4l2-ctl -d "$node" --get-ctrl brightness)" "brightness after another program tried to change it"
status=$(curl -s -o refused.json -w '%{http_code}' -X PATCH -H 'Content-Type: application/json' --data-binary '{"brightness": 100000}' "$api/devices/0/controls")
assert_eq 400 "$status" "an out-of-range brightness"
assert_eq "brightness: 10" "$(v4l2-ctl -d "$node" --get-ctrl brightness)"

note "a photo from the running camera"
curl -sS --fail-with-body -D photo.headers -o photo.jpg -X POST "$api/photos" || fail "POST /photos: $(cat photo.jpg)"
assert_contains "$(cat photo.headers)" "image/jpeg"
assert_eq 320 "$(ffprobe_value photo.jpg v:0 width)"

note "the live view from the running camera: a snapshot and the stream, scaled"
curl -sS --fail-with-body -D snapshot.headers -o snapshot.jpg "$api/snapshot.jpg?width=160" || fail "GET /snapshot.jpg: $(cat snapshot.jpg)"
assert_contains "$(cat snapshot.headers)" "image/jpeg"
assert_eq "160x90" "$(ffprobe_value snapshot.jpg v:0 width)x$(ffprobe_value snapshot.jpg v:0 height)"
ffmpeg -v error -f mpjpeg -i "$api/stream.mjpg?width=160&fps=10" -frames:v 10 -f framemd5 - >view.md5 ||
  fail "ffmpeg could not read /stream.mjpg"
assert_eq 10 "$(grep -vc '^#' view.md5)" "pictures ffmpeg decoded from the view"

note "a second service on the camera the first one streams from is refused"
mkdir rec2
assert_exit 69 "$CAPCTL" serve --video "$node" --listen 127.0.0.1:0 --dir rec2
assert_one_line_stderr

note "a recording started and stopped over HTTP"
id=$(call POST /recordings '{"file": "vm-%Y%m%d-%H%M%S.mp4"}' | json_field id)
wait_record_event serve.out started 20 "e.get('recording') == '$id'"
sleep 3
call POST "/recordings/$id/stop" >/dev/null
wait_record_event serve.out finished 30 "e.get('recording') == '$id'"
file=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "finished" and e.get("recording") == sys.argv[2]: print(e["files"][0])' serve.out "$id")
assert_file "rec/$file"
frames=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "finished" and e.get("recording") == sys.argv[2]: print(e["frames"], e["audioSamples"], e["dropped"])' serve.out "$id")
read -r reported samples dropped <<<"$frames"
assert_eq "$reported" "$(frame_count "rec/$file")" "frames in rec/$file"
# (Under emulation the encoder may fall behind: what was dropped is counted, not asserted.)
note "$reported frames, $samples audio samples, $dropped dropped"
((reported > 50)) || fail "only $reported frames in 3 s"
duration=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "finished" and e.get("recording") == sys.argv[2]: print(round(e["duration"] * 48000))' serve.out "$id")
within "$samples" "$duration" 24000 || fail "$samples audio samples in a recording of $duration samples' length"
ffmpeg -hide_banner -i "rec/$file" -map 0:a -af volumedetect -f null - 2>volume.txt || true
max=$(sed -n 's/.*max_volume: \(-*[0-9.]*\) dB.*/\1/p' volume.txt)
python3 -c "import sys; sys.exit(0 if float('$max') > -40 else 1)" || fail "no tone in the recording's audio (max $max dB)"

note "a second recording is still running when SIGTERM ends the service"
second=$(call POST /recordings '{"file": "second.mkv", "videoCodec": "mjpeg"}' | json_field id)
wait_record_event serve.out progress 20 "e.get('recording') == '$second'"
kill -TERM "$service"
status=0
wait "$service" || status=$?
assert_eq 0 "$status" "the service's exit status after SIGTERM"
wait_record_event serve.out finished 5 "e.get('recording') == '$second' and e.get('reason') == 'stopped'"
second_frames=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "finished" and e.get("recording") == sys.argv[2]: print(e["frames"])' serve.out "$second")
assert_eq "$second_frames" "$(frame_count rec/second.mkv)" "frames in rec/second.mkv"
wait_record_event serve.out service-stopped 5

note "the lock is released"
assert_ok "$CAPCTL" set "$node" brightness=128
