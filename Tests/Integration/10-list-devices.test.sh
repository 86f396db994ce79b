#!/usr/bin/env bash
# list-devices against vivid, snd-aloop and snd-dummy: what is listed, what is
# left out, the fields, filtering, and that every way of naming a device finds it.
source "$(dirname "$0")/lib.sh"
need python3

capture=$(vivid_node vid-cap)
output=$(vivid_node vid-out)
meta=$(vivid_node meta-cap)

assert_ok "$CAPCTL" list-devices --json
cp last.stdout all.json
python3 - "$capture" "$output" "$meta" <<'PY'
import json, sys
capture, output, meta = sys.argv[1:]
devices = json.load(open("all.json"))["devices"]
paths = [d["path"] for d in devices]
fields = {"index", "path", "uniqueID", "name", "mediaType", "driver", "bus", "modelID",
          "position", "hasTorch", "hasFlash", "access", "accessReason", "virtual"}
for d in devices:
    assert set(d) == fields, f"fields of {d['path']}: {sorted(d)}"
virtual = [d for d in devices if d["virtual"]]
assert [d["path"] for d in virtual] == ["test-pattern", "test-tone"], virtual
assert devices[-len(virtual):] == virtual, "virtual devices come after the hardware"
assert all(d["index"] is None for d in virtual), virtual
devices = [d for d in devices if not d["virtual"]]
assert capture in paths, f"{capture} not listed: {paths}"
assert output not in paths and meta not in paths, f"non-capture nodes listed: {paths}"
for pcm in ["hw:Loopback,0", "hw:Loopback,1", "hw:Dummy,0", "default"]:
    assert pcm in paths, f"{pcm} not listed: {paths}"
ids = [d["uniqueID"] for d in devices]
assert len(ids) == len(set(ids)), f"unique IDs repeat: {ids}"
cam = next(d for d in devices if d["path"] == capture)
assert cam["mediaType"] == "video" and cam["driver"] == "vivid", cam
assert cam["bus"].startswith("platform:vivid"), cam
assert cam["modelID"] is None and cam["access"] == "authorized", cam
assert cam["position"] in ("front", "back", "external", "unspecified"), cam
assert cam["uniqueID"].startswith("v4l2:platform_vivid-000:"), cam  # no udev in the guest: derived
loop = next(d for d in devices if d["path"] == "hw:Loopback,1")
assert loop["uniqueID"] == "alsa:Loopback:1" and loop["mediaType"] == "audio", loop
# Indexes count within each kind, in list order.
for kind in ("video", "audio"):
    assert [d["index"] for d in devices if d["mediaType"] == kind] == list(range(sum(d["mediaType"] == kind for d in devices)))
open("camera-id", "w").write(cam["uniqueID"])
open("camera-index", "w").write(str(cam["index"]))
PY

# --type filters; the text form names each device with its index.
assert_ok "$CAPCTL" list-devices --json --type audio
assert_eq 0 "$(python3 -c 'import json,sys; print(sum(d["mediaType"] != "audio" for d in json.load(sys.stdin)["devices"]))' <last.stdout)" "non-audio devices with --type audio"
assert_ok "$CAPCTL" list-devices
assert_stdout_contains "video:$(<camera-index)  "
assert_stdout_contains "$capture"
assert_stdout_contains "hw:Loopback,1"

# Path, unique ID and video:N all name the same camera.
for name in "$capture" "$(<camera-id)" "video:$(<camera-index)"; do
  assert_ok "$CAPCTL" formats "$name" --json
  assert_eq "$capture" "$(python3 -c 'import json,sys; print(json.load(sys.stdin)["device"]["path"])' <last.stdout)" "device named $name"
done

# A user outside the device's group sees it as denied, with the reason; so are
# the sound cards, whose nodes are root's alone without udev.
chmod 0660 "$capture"
chgrp video "$capture"
assert_ok setpriv --reuid=65534 --regid=65534 --clear-groups "$CAPCTL" list-devices --json --type video
python3 - "$capture" last.stdout <<'PY'
import json, sys
cam = next(d for d in json.load(open(sys.argv[2]))["devices"] if d["path"] == sys.argv[1])
assert cam["access"] == "denied", cam
assert "not in group 'video'" in cam["accessReason"], cam
PY
assert_ok setpriv --reuid=65534 --regid=65534 --clear-groups "$CAPCTL" list-devices --json --type audio
python3 - last.stdout <<'PY'
import json, sys
devices = {d["path"]: d for d in json.load(open(sys.argv[1]))["devices"]}
assert "hw:Loopback,1" in devices, devices.keys()
assert devices["hw:Loopback,1"]["access"] == "denied", devices["hw:Loopback,1"]
assert "permission denied" in devices["hw:Loopback,1"]["accessReason"]
PY
