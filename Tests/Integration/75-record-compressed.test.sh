#!/usr/bin/env bash
# `capctl record --video-codec copy` from an H.264 camera: a v4l2loopback node fed by
# ffmpeg/libx264 (one access unit a buffer, SPS and PPS in-band before each IDR picture,
# an IDR every second), joined wherever the feed is. Copied into MP4, MOV, MPEG-TS and
# Matroska: every file starts with a keyframe, every packet decodes, the file holds the
# frames and bytes the events report, lasts the 3 s limit within one GOP, and keeps at
# least 70 % of the frames ffmpeg captures from the same camera in 3 s. Each case runs
# even when an earlier one failed. (78-record-compressed-encode: the same camera encoded,
# and copied in segments.)
source "$(dirname "$0")/lib.sh"
need ffmpeg python3 v4l2-ctl

start_feeder h264
node=$(loopback_node h264)

note "reference: ffmpeg copies from $node"
reference=$(reference_frames "$node" h264)
note "ffmpeg captured $reference frames in 3 s"
((reference >= 20)) || fail "ffmpeg captured only $reference frames in 3 s (the feeder: $(tail -3 feeder-h264.log))"

least=$((reference * 70 / 100))

# record_3s FILE ARGS...: record 3 s from the camera into FILE and check it: the video
# within one GOP (1 s) of the limit, at least 70 % of the frames ffmpeg captured
record_3s() {
  local file=$1
  shift
  assert_ok "$CAPCTL" record --video "$node" "$@" --max-duration 3 --json "$file"
  check_recording "$file" h264 "$least" 1
}

for ext in mp4 mov ts mkv; do
  check "copy to .$ext" record_3s "copy.$ext" --video-codec copy
done

checks_done
