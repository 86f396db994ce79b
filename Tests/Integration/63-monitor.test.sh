#!/usr/bin/env bash
# `capctl monitor` reports a control change made by another process, and vivid's
# disconnect and its return on the same node; SIGINT and SIGTERM end it with status 0.
# (Nodes leaving and arriving in /dev are covered by the unit tests on a real inotify
# of a scratch folder: unloading vivid here is refused while the monitor has it open.)
source "$(dirname "$0")/lib.sh"
need v4l2-ctl python3

node=$(vivid_capture_node)

# events [FILTER]: the monitor's events as Python dicts matching FILTER (a Python
# expression over e); prints how many, e.g. count_events 'e["event"] == "connected"'
count_events() {
  python3 -c 'import json,sys
events = [json.loads(l) for l in open("monitor.out")]
print(sum(1 for e in events if eval(sys.argv[1])))' "$1"
}
# wait_event SECONDS FILTER: until at least one event matches; on failure the log
# shows what the monitor printed
wait_event() {
  local deadline=$((SECONDS + $1))
  until (($(count_events "$2") >= 1)); do
    if ((SECONDS >= deadline)); then
      echo "--- monitor.out:" >&2
      cat monitor.out monitor.err >&2
      fail "no event matching: $2"
    fi
    sleep 0.2
  done
}

"$CAPCTL" monitor --json >monitor.out 2>monitor.err &
monitor=$!
wait_until 20 grep -q '"event":"monitoring"' monitor.out
python3 -c 'import json,sys
first = json.loads(open("monitor.out").readline())
assert first["event"] == "monitoring", first
cam = next(d for d in first["devices"] if d["path"] == sys.argv[1])
assert cam["mediaType"] == "video" and cam["name"] == "vivid" and cam["watchingControls"] is True, cam' "$node" \
  || fail "first line: $(head -1 monitor.out)"

note "a control changed by another process"
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=77
wait_event 10 'e["event"] == "control" and e["control"] == "brightness"'
python3 -c 'import json,sys
events = [json.loads(l) for l in open("monitor.out")]
e = next(e for e in events if e["event"] == "control" and e["control"] == "brightness")
assert e["path"] == sys.argv[1] and e["device"] == "vivid" and e["value"] == 77 and e["changes"] == ["value"], e
assert e["id"] == 0x00980900 and e["time"].endswith("Z") and e["valueText"] is None, e' "$node" \
  || fail "control event: $(grep brightness monitor.out)"
assert_ok v4l2-ctl -d "$node" --set-ctrl=horizontal_flip=1
wait_event 10 'e["event"] == "control" and e["control"] == "horizontal_flip" and e["valueText"] == "on"'

note "vivid's disconnect: gone, then back on the same node once its handles closed"
assert_ok v4l2-ctl -d "$node" --set-ctrl=disconnect=1
wait_event 10 "e['event'] == 'disconnected' and e['path'] == '$node' and e['mediaType'] == 'video'"
wait_event 10 "e['event'] == 'connected' and e['path'] == '$node' and e['name'] == 'vivid'"
note "events flow again after the return"
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=78
wait_event 10 'e["event"] == "control" and e["control"] == "brightness" and e["value"] == 78'

note "SIGINT ends the monitor with status 0"
kill -INT "$monitor"
status=0
wait "$monitor" || status=$?
assert_eq 0 "$status" "monitor's exit status"
cat monitor.err >&2
[[ ! -s monitor.err ]] || fail "monitor wrote to stderr"

note "text mode flushes each line too; SIGTERM ends it with status 0"
node=$(vivid_capture_node)
"$CAPCTL" monitor >text.out 2>&1 &
monitor=$!
wait_until 20 grep -q "^monitoring" text.out
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=66
wait_until 10 grep -q "control  *$node  brightness = 66" text.out
kill -TERM "$monitor"
status=0
wait "$monitor" || status=$?
assert_eq 0 "$status" "exit status after SIGTERM"
assert_ok v4l2-ctl -d "$node" --set-ctrl=brightness=128 --set-ctrl=horizontal_flip=0
