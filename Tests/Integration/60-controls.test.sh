#!/usr/bin/env bash
# vivid's real controls round-trip through `capctl set` and `capctl controls`, and
# agree with v4l2-ctl; refusals (inactive, out of range, unknown, unsupported
# feature) change nothing and exit 64 with one line.
source "$(dirname "$0")/lib.sh"
need v4l2-ctl python3

node=$(vivid_capture_node)
note "vivid capture node: $node"

# v4l2_value NAME: the control's value as v4l2-ctl reads it
v4l2_value() { v4l2-ctl -d "$node" --get-ctrl="$1" | awk -F': ' '{ print $2 }'; }

# json_value NAME: the control's value in `capctl controls --json`
json_value() {
  python3 -c 'import json,sys
doc = json.load(open("controls.json"))
for group in doc["classes"]:
    for c in group["controls"]:
        if c["name"] == sys.argv[1]:
            print(c["value"]); sys.exit(0)
sys.exit("no control " + sys.argv[1])' "$1"
}

note "listing: every control v4l2-ctl knows, with the same values"
assert_ok "$CAPCTL" controls "$node" --json
cp last.stdout controls.json
# gain is volatile while gain_automatic is on (the driver moves it): compared below, in manual.
for name in brightness contrast saturation hue gain_automatic horizontal_flip vertical_flip; do
  assert_eq "$(v4l2_value "$name")" "$(json_value "$name")" "$name as capctl and v4l2-ctl read it"
done
python3 - <<'PY' || fail "controls --json lacks the documented shape"
import json
doc = json.load(open("controls.json"))
assert doc["device"]["path"], "device"
names = [g["name"] for g in doc["classes"]]
assert "User Controls" in names, names
user = next(g for g in doc["classes"] if g["name"] == "User Controls")
b = next(c for c in user["controls"] if c["name"] == "brightness")
for key in ["name", "label", "id", "type", "minimum", "maximum", "step", "default", "value", "valueText", "flags", "menu"]:
    assert key in b, key
assert b["id"] == 0x00980900 and b["type"] == "int" and b["minimum"] == 0 and b["maximum"] == 255, b
for feature in ["focus", "exposure", "whiteBalance", "zoom", "lowLightBoost"]:
    assert feature in doc["features"], feature
assert doc["features"]["focus"]["modes"] == [] and doc["features"]["zoom"]["supported"] is False
PY

note "text listing"
assert_ok "$CAPCTL" controls "$node"
assert_stdout_contains "User Controls"
assert_match "$LAST_STDOUT" "brightness +0x00980900 \(int\) +: min=0 max=255 step=1 default=128"
assert_stdout_contains "Camera features"

note "set: several controls at once, read back by v4l2-ctl and by capctl"
assert_ok "$CAPCTL" set "$node" brightness=60 contrast=70 horizontal_flip=on saturation=0x50
assert_eq $'brightness=60\ncontrast=70\nhorizontal_flip=1  # on\nsaturation=80' "$LAST_STDOUT"
assert_eq 60 "$(v4l2_value brightness)"
assert_eq 70 "$(v4l2_value contrast)"
assert_eq 1 "$(v4l2_value horizontal_flip)"
assert_eq 80 "$(v4l2_value saturation)"
assert_ok "$CAPCTL" controls "$node" brightness 0x00980901 horizontal_flip
assert_eq $'brightness=60\ncontrast=70\nhorizontal_flip=1  # on' "$LAST_STDOUT"

note "a value set by v4l2-ctl shows in capctl"
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=99 --set-ctrl=vertical_flip=1
assert_ok "$CAPCTL" controls "$node" brightness vertical_flip
assert_eq $'brightness=99\nvertical_flip=1  # on' "$LAST_STDOUT"

note "gain is inactive while gain_automatic is on"
assert_ok v4l2-ctl -d "$node" --set-ctrl=gain_automatic=1
assert_exit 64 "$CAPCTL" set "$node" gain=50
assert_one_line_stderr
assert_stderr_contains "gain is inactive: gain_automatic is on; set gain_automatic=0 (off) first"
note "in order, gain_automatic=0 makes gain settable in the same command"
assert_ok "$CAPCTL" set "$node" gain_automatic=0 gain=50 --json
python3 -c 'import json,sys
d = json.load(open("last.stdout"))
assert [a["name"] for a in d["applied"]] == ["gain_automatic", "gain"], d
assert [a["value"] for a in d["applied"]] == [0, 50], d
assert d["held"] is False' || fail "set --json document"
assert_eq 0 "$(v4l2_value gain_automatic)"
assert_eq 50 "$(v4l2_value gain)"
assert_ok "$CAPCTL" controls "$node" --json
cp last.stdout controls.json
assert_eq 50 "$(json_value gain)" "gain in manual as capctl reads it"

note "refusals change nothing"
assert_exit 64 "$CAPCTL" set "$node" brightness=10 contrast=300
assert_one_line_stderr
assert_stderr_contains "contrast=300 is out of range; allowed: 0…255"
assert_eq 99 "$(v4l2_value brightness)" "brightness after a refused command"
assert_exit 64 "$CAPCTL" set "$node" brigtness=10
assert_stderr_contains "no control named 'brigtness'; did you mean 'brightness'?"
assert_exit 64 "$CAPCTL" set "$node" horizontal_flip=sideways
assert_stderr_contains "'sideways' is not a value of horizontal_flip; allowed: 0 or 1"
assert_exit 64 "$CAPCTL" set "$node" focus=continuous
assert_stderr_contains "focus mode 'continuous' is not supported: the device has no focus controls"
assert_exit 64 "$CAPCTL" set "$node" zoom=2 --ramp 1
assert_stderr_contains "zoom is not supported"
assert_exit 64 "$CAPCTL" set "$node"
assert_stderr_contains "give at least one name=value setting"

note "defaults back"
assert_ok "$CAPCTL" set "$node" brightness=default contrast=default saturation=default horizontal_flip=off vertical_flip=off gain_automatic=on
assert_eq 128 "$(v4l2_value brightness)"
