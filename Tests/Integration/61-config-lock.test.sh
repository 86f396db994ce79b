#!/usr/bin/env bash
# The configuration lock: while `capctl set --hold` holds vivid, a second capctl is
# refused with status 69 naming the holder's process ID, and v4l2-ctl cannot change
# a control either (V4L2 priority); after SIGINT the holder exits 0 and the device
# is free again.
source "$(dirname "$0")/lib.sh"
need v4l2-ctl

node=$(vivid_capture_node)
v4l2_value() { v4l2-ctl -d "$node" --get-ctrl="$1" | awk -F': ' '{ print $2 }'; }

"$CAPCTL" set "$node" --hold brightness=10 >holder.out 2>holder.err &
holder=$!
wait_until 20 grep -q "^brightness=10" holder.out
note "holder is process $holder"
assert_eq 10 "$(v4l2_value brightness)"

note "a second capctl is refused, naming the holder"
assert_exit 69 "$CAPCTL" set "$node" brightness=20
assert_one_line_stderr
assert_stderr_contains "locked for configuration by process $holder (capctl)"
assert_exit 69 "$CAPCTL" set "$node" --hold
assert_stderr_contains "process $holder"

note "another program cannot change controls (V4L2 priority)"
run v4l2-ctl -d "$node" --set-ctrl=brightness=30
show_last
assert_eq 10 "$(v4l2_value brightness)" "brightness while the lock is held"

note "reading is still allowed"
assert_ok "$CAPCTL" controls "$node" brightness
assert_eq "brightness=10" "$LAST_STDOUT"

note "SIGINT releases the lock; the holder exits 0"
kill -INT "$holder"
status=0
wait "$holder" || status=$?
assert_eq 0 "$status" "holder's exit status"
assert_contains "$(cat holder.err)" "holding the configuration lock of $node as process $holder"
assert_ok "$CAPCTL" set "$node" brightness=20
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=128
assert_eq 128 "$(v4l2_value brightness)"
