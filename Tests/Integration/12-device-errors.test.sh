#!/usr/bin/env bash
# Bad device arguments against real nodes: one line on stderr naming the
# device and the cause, the documented exit status, nothing on stdout.
source "$(dirname "$0")/lib.sh"
need arecord setpriv

output=$(vivid_node vid-out)
meta=$(vivid_node meta-cap)
capture=$(vivid_node vid-cap)
echo "not a device" >regular-file

# expect STATUS TEXT ARGS...: capctl ARGS fails with STATUS, one stderr line containing TEXT
expect() {
  local status=$1 text=$2
  shift 2
  assert_exit "$status" "$CAPCTL" "$@"
  assert_empty_stdout
  assert_one_line_stderr
  assert_stderr_contains "$text"
}

expect 66 "/dev/video99: no such file or device" formats /dev/video99
expect 65 "$output: not a video capture device: it is a video output node" formats "$output"
expect 65 "$meta: not a video capture device: it is a metadata capture node" formats "$meta"
expect 65 "/dev/null: not a V4L2 device" formats /dev/null
expect 65 "regular-file: not a V4L2 device" formats "$PWD/regular-file"
expect 66 "video:9: no camera with index 9" formats video:9
expect 66 "audio:99: no microphone with index 99" formats audio:99
expect 66 "hw:NoSuchCard,0: no such ALSA capture device" formats hw:NoSuchCard,0
expect 66 "frontcam: no device with this path" formats frontcam

# Busy: another process holds the one PCM subdevice named.
arecord -q -D hw:Dummy,0,0 -f S16_LE -r 48000 -c 2 /dev/null &
holder=$!
trap 'kill $holder 2>/dev/null || true' EXIT
wait_until 10 grep -qs "owner_pid" /proc/asound/Dummy/pcm0c/sub0/status
expect 69 "hw:Dummy,0,0: device is busy" formats hw:Dummy,0,0
kill $holder
wait $holder 2>/dev/null || true

# Permission denied: a user outside the node's group.
chmod 0660 "$capture"
chgrp video "$capture"
assert_exit 77 setpriv --reuid=65534 --regid=65534 --clear-groups "$CAPCTL" formats "$capture"
assert_empty_stdout
assert_one_line_stderr
assert_stderr_contains "$capture: permission denied (crw-rw---- root:video)"
