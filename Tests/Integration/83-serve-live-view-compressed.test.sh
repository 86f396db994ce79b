#!/usr/bin/env bash
# capctl serve's live view of compressed cameras on a real V4L2 driver (v4l2loopback): an
# MJPEG camera's pictures are passed through, byte for byte, when the view asks for the
# camera's size (and scaled when it asks for another); an H.264 camera's view is decoded
# from its IDR picture on and encoded as JPEG, at the camera's size or scaled. The same
# service serves both cameras' views at once.
source "$(dirname "$0")/lib.sh"
need curl ffmpeg ffprobe python3

ip link set lo up 2>/dev/null || true
start_feeder mjpeg h264
mkdir rec
"$CAPCTL" serve --video "$(loopback_node mjpeg)" --video "$(loopback_node h264)" \
  --listen 127.0.0.1:0 --dir rec >serve.out 2>serve.err &
service=$!
trap 'kill $service 2>/dev/null || true; stop_feeders' EXIT
wait_record_event serve.out service-started 30
api=http://127.0.0.1:$(event_field serve.out service-started port)
width=${FEED_SIZE%x*}
height=${FEED_SIZE#*x}

# views_field FIELD: FIELD of each view GET /session lists, one a line
views_field() {
  curl -sS "$api/session" | python3 -c 'import json, sys
for view in json.load(sys.stdin)["views"]: print(view["camera"], view[sys.argv[1]])' "$1"
}

mjpeg_passthrough() {
  # A viewer at the camera's size, kept open while the view's state is read.
  curl -sS --max-time 6 -o held.mjpg "$api/stream.mjpg?camera=0" &
  local viewer=$! passes=""
  for _ in $(seq 50); do
    passes=$(views_field passesThrough | awk '$1 == 0 { print $2 }')
    [[ $passes == True ]] && break
    sleep 0.2
  done
  assert_eq True "$passes" "the MJPEG camera's view passes its pictures through"
  ffmpeg -v error -f mpjpeg -i "$api/stream.mjpg?camera=0" -frames:v 5 -c copy -f image2 view-%d.jpg ||
    fail "ffmpeg could not read the MJPEG camera's view"
  local picture
  for picture in view-1.jpg view-5.jpg; do
    assert_eq "${width}x$height" "$(ffprobe_value "$picture" v:0 width)x$(ffprobe_value "$picture" v:0 height)" "$picture's size"
    assert_eq ffd8 "$(head -c 2 "$picture" | od -An -tx1 | tr -d ' ')" "$picture starts with SOI"
  done
  wait $viewer || true
}
check "an MJPEG camera's view at its size is its own pictures" mjpeg_passthrough

scaled_views() {
  ffmpeg -v error -f mpjpeg -i "$api/stream.mjpg?camera=0&width=160" -frames:v 5 -f framemd5 - >mjpeg-small.md5 ||
    fail "ffmpeg could not read the scaled MJPEG view"
  assert_eq 5 "$(grep -vc '^#' mjpeg-small.md5)" "pictures of the scaled MJPEG view"
  curl -sS --fail-with-body -o h264.jpg "$api/snapshot.jpg?camera=1" || fail "GET /snapshot.jpg?camera=1: $(cat h264.jpg)"
  assert_eq "${width}x$height" "$(ffprobe_value h264.jpg v:0 width)x$(ffprobe_value h264.jpg v:0 height)" "the H.264 camera's snapshot"
  ffmpeg -v error -f mpjpeg -i "$api/stream.mjpg?camera=1&width=160&fps=5" -frames:v 6 -f framemd5 - >h264-small.md5 ||
    fail "ffmpeg could not read the H.264 camera's view"
  assert_eq 6 "$(grep -vc '^#' h264-small.md5)" "pictures of the H.264 camera's view"
  # The feed moves: its pictures differ.
  assert_eq 6 "$(grep -v '^#' h264-small.md5 | awk -F, '{ print $NF }' | sort -u | wc -l)" "distinct pictures"
}
check "scaled views of both cameras, the H.264 one decoded" scaled_views

kill -TERM $service
status=0
wait $service || status=$?
assert_eq 0 "$status" "the service's exit status after SIGTERM"
checks_done
