#!/usr/bin/env bash
# formats against vivid: the (fourcc, size, interval) tuples equal v4l2-ctl's;
# text form; libv4l2 conversions; microphones against arecord's hardware dump.
source "$(dirname "$0")/lib.sh"
need python3 v4l2-ctl arecord

capture=$(vivid_node vid-cap)

python3 "$REPO/Tests/Integration/compare_formats.py" "$CAPCTL" "$capture" || fail "formats differ from v4l2-ctl --list-formats-ext"

assert_ok "$CAPCTL" formats "$capture"
assert_stdout_contains "active: "
assert_stdout_contains "[0] "
assert_match "$LAST_STDOUT" '[0-9]+x[0-9]+ +[0-9.]+ fps \([0-9.]+ ms\)' "text form shows fps and duration"

# libv4l2 adds only formats marked emulated; the device's own stay as they are.
assert_ok "$CAPCTL" formats "$capture" --json
cp last.stdout plain.json
assert_ok "$CAPCTL" formats "$capture" --json --libv4l2
cp last.stdout converted.json
python3 - <<'PY'
import json
plain = [f["fourcc"] for f in json.load(open("plain.json"))["formats"]]
converted = json.load(open("converted.json"))["formats"]
own = [f["fourcc"] for f in converted if not f["emulated"]]
extra = [f["fourcc"] for f in converted if f["emulated"]]
assert sorted(own) == sorted(plain), (own, plain)
assert not set(extra) & set(plain), extra
print(f"{len(plain)} formats, {len(extra)} emulated by libv4l2")
PY

# A microphone: sample formats and ranges as the hardware reports them to arecord.
for pcm in hw:Loopback,1 hw:Dummy,0; do
  assert_ok "$CAPCTL" formats "$pcm" --json
  cp last.stdout audio.json
  timeout 10 arecord -D "$pcm" --dump-hw-params -d 1 -f S16_LE -r 48000 -c 2 /dev/null 2>dump.txt || true
  python3 - "$pcm" <<'PY'
import json, re, sys
doc = json.load(open("audio.json"))
dump = open("dump.txt").read()
formats = re.search(r"^FORMAT:\s+(.*)$", dump, re.M).group(1).split()
rate = [int(x) for x in re.search(r"^RATE:\s+\[(\d+) (\d+)\]", dump, re.M).groups()]
channels = re.search(r"^CHANNELS:\s+(?:\[(\d+) (\d+)\]|(\d+))", dump, re.M).groups()
channels = [int(channels[0]), int(channels[1])] if channels[0] else [int(channels[2])] * 2
ours = doc["formats"]
assert [f["sampleFormat"] for f in ours] == formats, ([f["sampleFormat"] for f in ours], formats)
assert min(f["rates"]["min"] for f in ours) == rate[0] and max(f["rates"]["max"] for f in ours) == rate[1], (ours, rate)
assert min(f["channels"]["min"] for f in ours) == channels[0] and max(f["channels"]["max"] for f in ours) == channels[1], (ours, channels)
assert doc["device"]["path"] == sys.argv[1]
print(sys.argv[1], formats, rate, channels)
PY
done
