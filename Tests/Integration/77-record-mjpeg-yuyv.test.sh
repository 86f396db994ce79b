#!/usr/bin/env bash
# `capctl record` from an MJPEG camera and a YUYV camera that a real V4L2 driver
# (v4l2loopback) carries: MJPEG copied and encoded, YUYV encoded. Each file decodes whole,
# holds the frames the events report, lasts the 3 s limit within a few frames, and keeps
# at least 70 % of the frames ffmpeg captures from the same camera in 3 s (YUYV: of the
# frames the feeder sends in 3 s).
source "$(dirname "$0")/lib.sh"
need ffmpeg python3 v4l2-ctl

start_feeder mjpeg yuyv

# record_3s NODE REFERENCE CODEC FILE ARGS...: record 3 s into FILE and check it: the
# limit within a few frames, at least 70 % of REFERENCE frames
record_3s() {
  local node=$1 reference=$2 codec=$3 file=$4
  shift 4
  assert_ok "$CAPCTL" record --video "$node" "$@" --max-duration 3 --json "$file"
  check_recording "$file" "$codec" $((reference * 70 / 100)) 0.3
}

mjpeg=$(loopback_node mjpeg)
reference=$(reference_frames "$mjpeg" mjpeg)
note "ffmpeg captured $reference MJPEG frames in 3 s"
((reference >= 20)) || fail "ffmpeg captured only $reference frames in 3 s (the feeder: $(tail -3 feeder-mjpeg.log))"
check "MJPEG copied to .mkv" record_3s "$mjpeg" "$reference" mjpeg copy.mkv --video-codec copy
# libx264 with its default preset (medium) does not keep up with 15 fps under emulation
check "MJPEG encoded to .mp4" record_3s "$mjpeg" "$reference" h264 encode.mp4 --preset ultrafast
stop_feeder mjpeg

# raw frames need no reference capture: 3 s of the feed
check "YUYV encoded to .mp4" record_3s "$(loopback_node yuyv)" $((3 * FEED_FPS)) h264 yuyv.mp4 --preset ultrafast

checks_done
