#!/usr/bin/env bash
# `capctl record` from an H.264 camera (v4l2loopback fed by ffmpeg/libx264, SPS and PPS
# in-band before each IDR picture, an IDR every second), encoded again: each frame is
# decoded for the encoder, and the file holds the frames the events report, at least 70 %
# of those ffmpeg captures from the same camera in 3 s. And copied in 1-second segments:
# each segment starts with a keyframe and decodes on its own, and together they hold the
# frames the events report. With --overlay, the H.264 frames are decoded before the
# text is drawn: the file holds the frames reported, and frame 10 shows a dark box with
# light text at the top left, where the plain recording's frame does not.
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

# The brightest luma of frame 10 of FILE in the rectangle W:H:X:Y.
luma_max() {
  ffmpeg -v error -i "$1" -vf "select=eq(n\,10),crop=$2,signalstats,metadata=print:key=lavfi.signalstats.YMAX:file=-" -f null - |
    sed -n 's/.*YMAX=\([0-9]*\).*/\1/p' | head -1
}

overlay() {
  assert_ok "$CAPCTL" record --video "$node" --overlay "CAM %H:%M:%S" --preset ultrafast --max-duration 3 --json overlay.mp4
  check_recording overlay.mp4 h264 $((reference * 70 / 100)) 0.3
  # At 240 lines the glyphs are scaled twice: the box begins at 4,4 with 4 dark rows above the text.
  local strip text plain
  strip=$(luma_max overlay.mp4 12:2:6:5)
  text=$(luma_max overlay.mp4 60:20:4:4)
  plain=$(luma_max encode.mp4 60:20:4:4)
  note "luma max: box edge $strip, text $text, the plain recording there $plain"
  ((strip <= 28)) || fail "the box's edge in frame 10 is not dark (luma up to $strip)"
  ((text >= 200)) || fail "no light text in the box of frame 10 (luma up to $text)"
  ((plain < 200)) || fail "the plain recording is as light there (luma up to $plain): the check cannot tell"
}
check "burned-in text on the H.264 camera's frames" overlay

checks_done
