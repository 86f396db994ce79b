#!/usr/bin/env bash
# `capctl record` from vivid: --max-duration ends the file within one frame of the limit,
# --max-size keeps it under the limit, and segments add up to the frames reported with
# no frame in two files.
source "$(dirname "$0")/lib.sh"
need ffprobe python3

node=$(vivid_capture_node)

note "duration limit"
assert_ok "$CAPCTL" record --video "$node" --size 320x180 --max-duration 3 --progress json dur.mp4
assert_eq '"max-duration"' "$(event_field last.stdout finished reason)"
frames=$(event_field last.stdout finished frames)
((frames > 3)) || fail "only $frames frames"
assert_eq "$frames" "$(frame_count dur.mp4)" "frames in the file"
gap=$(largest_gap dur.mp4)
duration=$(stream_duration dur.mp4 video)
note "video track: $duration s, $frames frames, largest gap $gap s"
within "$duration" 3 "$gap" || fail "video lasts $duration s; the limit is 3 s (one frame: $gap s)"

note "size limit"
assert_ok "$CAPCTL" record --video "$node" --size 640x360 --max-size 150K --max-duration 2m --progress json size.mp4
assert_eq '"max-size"' "$(event_field last.stdout finished reason)"
size=$(stat -c %s size.mp4)
note "size.mp4: $size bytes"
((size <= 150000)) || fail "size.mp4 has $size bytes, over the 150K limit"
((size >= 50000)) || fail "size.mp4 stopped early at $size bytes"
assert_eq "$size" "$(event_field last.stdout finished bytes)"
assert_eq "$(event_field last.stdout finished frames)" "$(frame_count size.mp4)"

note "segments"
assert_ok "$CAPCTL" record --video "$node" --size 320x180 --max-duration 3.5 --segment-duration 1 --progress json 'seg-%n.mp4'
assert_eq '["seg-1.mp4", "seg-2.mp4", "seg-3.mp4", "seg-4.mp4"]' "$(event_field last.stdout finished files)"
total=0
for f in seg-1.mp4 seg-2.mp4 seg-3.mp4 seg-4.mp4; do
  n=$(frame_count "$f")
  unique=$(packet_times "$f" | uniq | wc -l)
  assert_eq "$n" "$unique" "$f: frames with distinct times"
  ((n > 0)) || fail "$f has no frame"
  total=$((total + n))
done
python3 - <<'PY' || fail "segment events do not match the files"
import json, subprocess
events = [json.loads(l) for l in open("last.stdout")]
segments = [e for e in events if e["event"] == "segment"]
assert [s["file"] for s in segments] == ["seg-1.mp4", "seg-2.mp4", "seg-3.mp4", "seg-4.mp4"], segments
# Each cut falls at its time, or up to 1 ms before it at a frame that begins that close to it.
for s in segments[:3]:
    assert -1e-3 - 1e-9 <= s["duration"] - 1 < 1e-6, s
assert -1e-3 - 1e-9 <= sum(s["duration"] for s in segments) - 3.5 < 1e-6, segments
assert all(s["complete"] for s in segments), segments
PY
assert_eq "$(event_field last.stdout finished frames)" "$total" "frames over all segments"
