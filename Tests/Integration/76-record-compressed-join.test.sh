#!/usr/bin/env bash
# `capctl record` from H.264 cameras that are harder to join: one whose IDR pictures come
# 3 s apart, joined in the middle of a GOP (copied: the file must still start with a
# keyframe and decode), and one that sends its SPS and PPS in a buffer of their own before
# each IDR picture (copied and encoded: the parameter sets are no frame of their own).
source "$(dirname "$0")/lib.sh"
need ffmpeg python3 v4l2-ctl

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
  # The feeder reports the frames it has made every 0.2 s (later under load): start while
  # it is between a ninth and two thirds into a GOP, so that capctl, which takes a moment
  # to open the camera, comes in after an IDR and at least a second before the next one.
  # Frames before the first IDR are dropped and counted (droppedBeforeKeyframe): none means
  # capctl happened to begin at an IDR after all (once in 45 times), so it tries again.
  local n attempt deadline
  for attempt in 1 2; do
    deadline=$((SECONDS + 20))
    until n=$(feeder_frames h264) && ((n % gop >= gop / 9 && n % gop <= gop * 2 / 3)); do
      ((SECONDS < deadline)) || fail "cannot catch the feeder inside a GOP (last at frame $n)"
      sleep 0.1
    done
    note "starting at the feeder's frame $n (an IDR every $gop frames)"
    record_3s "$(loopback_node h264)" "join-$attempt.mp4" --video-codec copy
    ((EV_BEFORE_KEY == 0)) || return 0
    note "no frame came before the first keyframe: capctl began at an IDR"
  done
  fail "capctl began at an IDR twice: the feed was not joined in the middle of a GOP"
}
check "join a GOP of $gop frames in its middle, copy to .mp4" join_mid_gop
stop_feeder h264

split=$(loopback_node h264-split)
check "SPS and PPS in a buffer of their own: copy to .mp4" record_3s "$split" split-copy.mp4 --video-codec copy
check "SPS and PPS in a buffer of their own: encode to .mp4" record_3s "$split" split-encode.mp4 --preset ultrafast

checks_done
