#!/usr/bin/env bash
# snap against vivid: size and pixel content of JPEG, PNG and raw photos (vivid's
# test pattern set to 100% white, then to checkers), a Bayer format converted through
# libv4l2, the events in order once each with matching IDs, a burst with rising
# timestamps, a live photo movie holding the photo's moment, and bad input.
source "$(dirname "$0")/lib.sh"
need python3 v4l2-ctl ffmpeg ffprobe

capture=$(vivid_node vid-cap)

# menu_index CONTROL TEXT: the index of the menu entry TEXT of a vivid control
# (awk reads to the end: leaving early would kill v4l2-ctl with SIGPIPE mid-listing)
menu_index() {
  v4l2-ctl -d "$capture" -L | awk -v control="$1" -v text="$2" '
    $1 == control { inside = 1; next }
    inside && /^[[:space:]]+[0-9]+:/ { line = $0; sub(/^[[:space:]]+/, "", line); idx = line; sub(/:.*/, "", idx); sub(/^[0-9]+: /, "", line); if (line == text && found == "") found = idx; next }
    inside { inside = 0 }
    END { if (found != "") print found }'
}

# mean_luma IMAGE: the mean of the image's grey values, 0 to 255
mean_luma() {
  ffmpeg -v error -i "$1" -f rawvideo -pix_fmt gray - | python3 -c 'import sys; d = sys.stdin.buffer.read(); print(int(sum(d) / len(d)))'
}

# dark_fraction IMAGE: per cent of pixels darker than mid-grey
dark_fraction() {
  ffmpeg -v error -i "$1" -f rawvideo -pix_fmt gray - | python3 -c 'import sys; d = sys.stdin.buffer.read(); print(int(100 * sum(1 for b in d if b < 128) / len(d)))'
}

white=$(menu_index test_pattern "100% White")
checkers=$(menu_index test_pattern "16x16 Checkers")
[[ -n $white && -n $checkers ]] || fail "vivid's test_pattern menu lacks 100% White or 16x16 Checkers: $(v4l2-ctl -d "$capture" -L)"
note "test_pattern: white $white, checkers $checkers"
v4l2-ctl -d "$capture" -c test_pattern="$white"
# No text drawn over the pattern.
v4l2-ctl -d "$capture" -c osd_text_mode=2 || true

note "JPEG, PNG and raw of a white frame"
assert_ok "$CAPCTL" snap --video "$capture" --size 640x360 --pixel-format YUYV --warmup 1f white.jpg
assert_eq "640" "$(ffprobe_value white.jpg v:0 width)" "JPEG width"
assert_eq "360" "$(ffprobe_value white.jpg v:0 height)" "JPEG height"
luma=$(mean_luma white.jpg)
(( luma >= 240 )) || fail "white JPEG has mean luma $luma"

assert_ok "$CAPCTL" snap --video "$capture" --size 640x360 --pixel-format YUYV --warmup 1f white.png
assert_eq "640x360" "$(ffprobe_value white.png v:0 width)x$(ffprobe_value white.png v:0 height)" "PNG size"
assert_eq "png" "$(ffprobe_value white.png v:0 codec_name)"
luma=$(mean_luma white.png)
(( luma >= 240 )) || fail "white PNG has mean luma $luma"

assert_ok "$CAPCTL" snap --video "$capture" --size 640x360 --pixel-format YUYV --warmup 1f white.raw
assert_file white.raw.json
python3 - <<'PY' || fail "raw photo: $(cat white.raw.json)"
import json
d = json.load(open("white.raw.json"))
data = open("white.raw", "rb").read()
assert d["fourcc"] == "YUYV" and d["width"] == 640 and d["height"] == 360, d
assert d["bytesPerLine"] >= 1280 and len(data) == d["byteCount"] == d["bytesPerLine"] * 360, (d, len(data))
luma = data[0::2]
mean = sum(luma) / len(luma)
assert mean >= 230, mean  # Y of 100% white is 235 (limited range)
print("raw YUYV white, mean Y", mean)
PY

note "checkers"
v4l2-ctl -d "$capture" -c test_pattern="$checkers"
assert_ok "$CAPCTL" snap --video "$capture" --size 640x360 --pixel-format YUYV --warmup 1f checkers.png
dark=$(dark_fraction checkers.png)
(( dark >= 35 && dark <= 65 )) || fail "checkers PNG is $dark% dark"

note "Bayer input converts through libv4l2"
v4l2-ctl -d "$capture" -c test_pattern="$white"
bayer=$("$CAPCTL" formats "$capture" --json | python3 -c 'import json, sys
f = [x["fourcc"] for x in json.load(sys.stdin)["formats"] if x["fourcc"] in ("BA81", "GBRG", "GRBG", "RGGB")]
print(f[0] if f else "")')
[[ -n $bayer ]] || fail "vivid offers no 8-bit Bayer format"
assert_ok "$CAPCTL" snap --video "$capture" --size 640x360 --pixel-format "$bayer" --warmup 1f --json bayer.png
assert_contains "$LAST_STDOUT" '"event":"didFinishProcessingPhoto"'
assert_eq "640x360" "$(ffprobe_value bayer.png v:0 width)x$(ffprobe_value bayer.png v:0 height)" "Bayer PNG size"
luma=$(mean_luma bayer.png)
(( luma >= 200 )) || fail "white through $bayer has mean luma $luma"

note "events and a burst"
assert_ok "$CAPCTL" snap --video "$capture" --size 320x180 --warmup 0 --count 3 --json "burst-%n.jpg"
cp last.stdout burst.ndjson
python3 - <<'PY' || fail "burst events: $(cat burst.ndjson)"
import json, os
events = [json.loads(line) for line in open("burst.ndjson")]
assert events[-1] == {"event": "finished", "photos": 3, "failed": 0}, events[-1]
ids = []
for e in events[:-1]:
    if e["uniqueID"] not in ids:
        ids.append(e["uniqueID"])
assert len(ids) == 3, ids
order = ["willBeginCapture", "willCapturePhoto", "didCapturePhoto", "didFinishProcessingPhoto", "didFinishCapture"]
for i in ids:
    assert [e["event"] for e in events if e.get("uniqueID") == i] == order, i
times = [e["timestamp"] for e in events if e["event"] == "didCapturePhoto"]
assert times == sorted(times) and len(set(times)) == 3, times
for n in (1, 2, 3):
    assert os.path.getsize(f"burst-{n}.jpg") > 0
print("burst timestamps", times)
PY
assert_no_file burst-4.jpg

note "live photo"
assert_ok "$CAPCTL" snap --video "$capture" --size 320x180 --warmup 0 --live --json live.jpg
cp last.stdout live.ndjson
assert_file live.mov
python3 - <<'PY' || fail "live events: $(cat live.ndjson)"
import json
events = [json.loads(line) for line in open("live.ndjson")]
movie = [e for e in events if e["event"] == "didFinishProcessingLivePhotoMovie"][0]
assert movie["path"] == "live.mov", movie
assert 0 < movie["photoDisplayTime"] <= movie["duration"], movie
assert abs(movie["photoDisplayTime"] - 1.5) < 0.6 and movie["duration"] > 2.0, movie
print("live movie", movie["duration"], "s, photo at", movie["photoDisplayTime"], "s,", movie["frames"], "frames")
PY
duration=$(ffprobe_format live.mov duration)
python3 -c "import sys; sys.exit(0 if float('$duration') > 2.0 else 1)" || fail "live.mov lasts $duration s"

note "bad input"
echo keep > exists.jpg
assert_exit 73 "$CAPCTL" snap --video "$capture" exists.jpg
assert_one_line_stderr
assert_eq keep "$(<exists.jpg)" "existing file untouched"
assert_exit 64 "$CAPCTL" snap --video "$capture" --size 100x100 odd.jpg
assert_one_line_stderr
assert_no_file odd.jpg
assert_exit 64 "$CAPCTL" snap --video "$capture" --flash on flash.jpg
assert_one_line_stderr
assert_stderr_contains "flash"
assert_no_file flash.jpg
assert_exit 64 "$CAPCTL" snap --video "$capture" --count 0 zero.jpg
assert_no_file zero.jpg
# auto on a camera without a flash takes the photo without one
assert_ok "$CAPCTL" snap --video "$capture" --size 320x180 --warmup 0 --flash auto --json auto.jpg
assert_contains "$LAST_STDOUT" '"flashFired":false'
