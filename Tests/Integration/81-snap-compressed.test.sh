#!/usr/bin/env bash
# `capctl snap` from compressed cameras that a real V4L2 driver (v4l2loopback) carries: an
# MJPEG camera's frame becomes the JPEG as it came (passthrough), and an H.264 camera's
# photo is decoded from the next IDR picture, to JPEG and to PNG: each a decodable image
# of the camera's size.
source "$(dirname "$0")/lib.sh"
need ffmpeg v4l2-ctl

start_feeder mjpeg h264

# snap_image NODE FILE CODEC: snap a photo into FILE: one picture of the feed's size, in
# CODEC, that decodes without a word, and the event's bytes are the file's
snap_image() {
  local node=$1 file=$2 codec=$3
  assert_ok "$CAPCTL" snap --video "$node" --json "$file"
  assert_file "$file"
  grep '"event":"didFinishProcessingPhoto"' last.stdout >photo.json || { show_last; fail "no didFinishProcessingPhoto event"; }
  assert_contains "$(<photo.json)" "\"bytes\":$(stat -c %s "$file")," "$file: bytes in the event against the file's size"
  probe_video "$file"
  assert_eq "$codec $FEED_SIZE" "${PROBE_CODEC[$file]} ${PROBE_SIZE[$file]}" "$file: codec and size"
  assert_decodes "$file" 1
}

mjpeg_passthrough() {
  snap_image "$(loopback_node mjpeg)" mjpeg.jpg mjpeg
  assert_contains "$(<photo.json)" '"passthrough":true' "MJPEG to JPEG is passthrough"
  # the JPEG as the camera wrote it: from its SOI marker to its EOI marker, nothing after
  assert_eq ffd8 "$(head -c 2 mjpeg.jpg | od -An -tx1 | tr -d ' ')" "mjpeg.jpg starts with SOI"
  assert_eq ffd9 "$(tail -c 2 mjpeg.jpg | od -An -tx1 | tr -d ' ')" "mjpeg.jpg ends with EOI"
}
check "MJPEG camera to .jpg: the camera's JPEG as it came" mjpeg_passthrough
check "H.264 camera to .jpg" snap_image "$(loopback_node h264)" h264.jpg mjpeg
check "H.264 camera to .png" snap_image "$(loopback_node h264)" h264.png png

checks_done
