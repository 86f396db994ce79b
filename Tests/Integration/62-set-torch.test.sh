#!/usr/bin/env bash
# set-torch on a real LED class device (the guest keyboard's caps-lock LED), its
# status, usage errors, and the clear error for vivid, which has no torch.
source "$(dirname "$0")/lib.sh"
need python3

led_dir=$(ls -d /sys/class/leds/*::capslock 2>/dev/null | head -1)
[[ -n $led_dir ]] || fail "no keyboard caps-lock LED in /sys/class/leds: $(ls /sys/class/leds)"
led=${led_dir##*/}
note "LED $led, max_brightness $(<"$led_dir/max_brightness")"

assert_ok "$CAPCTL" set-torch on --led "$led"
assert_stdout_contains "torch on at level 1.0  (LED $led)"
assert_eq "$(<"$led_dir/max_brightness")" "$(<"$led_dir/brightness")" "brightness after on"

assert_ok "$CAPCTL" set-torch --status --led "$led" --json
python3 -c 'import json
d = json.load(open("last.stdout"))
assert d["sourceKind"] == "led" and d["active"] is True and d["level"] == 1.0 and d["available"] is True, d
assert d["hasTorch"] is True and d["hasFlash"] is False and d["maxAvailableLevel"] == 1.0 and d["faults"] == [], d' \
  || fail "status document: $LAST_STDOUT"

assert_ok "$CAPCTL" set-torch off --led "$led"
assert_stdout_contains "torch off"
assert_eq 0 "$(<"$led_dir/brightness")" "brightness after off"

assert_ok "$CAPCTL" set-torch on --led "$led" --level 0.2
assert_eq 1 "$(<"$led_dir/brightness")" "a one-step LED lights at any level"
assert_ok "$CAPCTL" set-torch off --led "$led"

note "usage errors"
assert_exit 64 "$CAPCTL" set-torch on --led "$led" --level 1.5
assert_one_line_stderr
assert_stderr_contains "--level 1.5 is outside 0.0-1.0"
assert_exit 64 "$CAPCTL" set-torch on --led "$led" --level bright
assert_exit 64 "$CAPCTL" set-torch off --level 0.5 --led "$led"
assert_exit 64 "$CAPCTL" set-torch --status on
assert_exit 66 "$CAPCTL" set-torch on --led no-such-led
assert_stderr_contains "no LED named 'no-such-led'"
assert_stderr_contains "$led"
assert_eq 0 "$(<"$led_dir/brightness")" "brightness after refusals"

note "vivid has no torch"
node=$(vivid_capture_node)
assert_exit 69 "$CAPCTL" set-torch on --device "$node"
assert_one_line_stderr
assert_stderr_contains "$node: no torch"
assert_ok "$CAPCTL" list-devices --json --type video
python3 -c 'import json,sys
d = json.load(open("last.stdout"))
cam = next(x for x in d["devices"] if x["path"] == sys.argv[1])
assert cam["hasTorch"] is False and cam["hasFlash"] is False, cam' "$node" || fail "list-devices torch fields"
