#!/usr/bin/env bash
# `capctl record` from H.264 cameras that are harder to join: one whose IDR pictures come
# 3 s apart, joined in the middle of a GOP (copied: the file must still start with a
# keyframe and decode), and one that sends its SPS and PPS in a buffer of their own before
# each IDR picture (copied and encoded: the parameter sets are no frame of their own).
source "$(dirname "$0")/lib.sh"
need ffmpeg ffprobe python3 v4l2-ctl

gop=45
start_feeder "h264@$gop" h264-split

# record_3s NODE FILE ARGS...: record 3 s into FILE and check it: at least 70 % of the
# frames the feeder sends in 3 s
record_3s() {
  local node=$1 file=$2
  shift 2
  assert_ok "$CAPCTL" record --video "$node" "$@" --max-duration 3 --json "$file"
  check_recording "$file" h264 $((3 * FEED_FPS * 70 / 100)) 1
}

join_mid_gop() {
  # The feeder reports the frames it has made every 0.2 s: wait for a quarter of a GOP
  # past an IDR, so that capctl (which takes a moment to open the camera) comes in well
  # before the next one.
  local n wait tries=0
  while :; do
    n=$(feeder_frames h264)
    (((n % gop) >= gop / 4 - 3 && (n % gop) <= gop / 4 + 3)) && break
    ((++tries < 5)) || fail "cannot catch the feeder a quarter into a GOP (at frame $n)"
    wait=$(((gop + gop / 4 - n % gop) % gop))
    sleep "$(awk -v f="$wait" -v r="$FEED_FPS" 'BEGIN { printf "%.2f", f / r }')"
  done
  note "starting at the feeder's frame $n (an IDR every $gop frames)"
  record_3s "$(loopback_node h264)" join.mp4 --video-codec copy
}
check "join a GOP of $gop frames in its middle, copy to .mp4" join_mid_gop

split=$(loopback_node h264-split)
check "SPS and PPS in a buffer of their own: copy to .mp4" record_3s "$split" split-copy.mp4 --video-codec copy
check "SPS and PPS in a buffer of their own: encode to .mp4" record_3s "$split" split-encode.mp4

checks_done
