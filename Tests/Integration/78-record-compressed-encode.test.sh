#!/usr/bin/env bash
# `capctl record` from an H.264 camera (v4l2loopback fed by ffmpeg/libx264, SPS and PPS
# in-band before each IDR picture, an IDR every second), encoded again: each frame is
# decoded for the encoder, and the file holds the frames the events report, at least 70 %
# of those ffmpeg captures from the same camera in 3 s. And copied in 1-second segments:
# each segment starts with a keyframe and decodes on its own, and together they hold the
# frames the events report.
source "$(dirname "$0")/lib.sh"
need ffmpeg python3 v4l2-ctl

start_feeder h264
node=$(loopback_node h264)

note "reference: ffmpeg copies from $node"
reference=$(reference_frames "$node" h264)
note "ffmpeg captured $reference frames in 3 s"
((reference >= 20)) || fail "ffmpeg captured only $reference frames in 3 s (the feeder: $(tail -3 feeder-h264.log))"

encode() {
  # libx264 with its default preset (medium) does not keep up with 15 fps under emulation
  assert_ok "$CAPCTL" record --video "$node" --preset ultrafast --max-duration 3 --json encode.mp4
  check_recording encode.mp4 h264 $((reference * 70 / 100)) 0.3
}
check "encode (libx264, ultrafast) to .mp4" encode

segments() {
  assert_ok "$CAPCTL" record --video "$node" --video-codec copy --max-duration 3 --segment-duration 1 --json 'seg-%n.mp4'
  cp last.stdout segments.events
  record_events
  assert_eq max-duration "$EV_REASON" "segments: finished reason"
  local files f total=0
  read -ra files <<<"$EV_FILES"
  ((${#files[@]} >= 2)) || fail "3 s in 1-second segments made ${#files[@]} file(s): $EV_FILES"
  probe_video "${files[@]}"
  for f in "${files[@]}"; do
    assert_decodes "$f" "${EV_SEGMENT_FRAMES[$f]:-missing}"
    total=$((total + PROBE_PACKETS[$f]))
  done
  assert_eq "$EV_FRAMES" "$total" "frames over all segments against the finished event"
}
check "copy in 1-second segments" segments

checks_done
