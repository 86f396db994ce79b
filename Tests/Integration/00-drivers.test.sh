#!/usr/bin/env bash
# The test environment itself: vivid's capture node, the snd-aloop and snd-dummy
# cards, sound travelling through the loopback, and an executable capctl.
source "$(dirname "$0")/lib.sh"
need v4l2-ctl arecord aplay od awk

note "capctl under test: $CAPCTL"
[[ -f $CAPCTL && -x $CAPCTL ]] || fail "CAPCTL is not an executable file: $CAPCTL"

note "vivid"
node=$(vivid_capture_node)
note "vivid capture node: $node"
[[ -c $node ]] || fail "$node is not a character device"
assert_ok v4l2-ctl --list-devices
assert_stdout_contains "$node"
assert_ok v4l2-ctl -d "$node" --all
assert_stdout_contains "Driver name      : vivid"
assert_match "$LAST_STDOUT" "Device Caps[^:]*:[^\n]*"$'\n'"[[:space:]]+Video Capture" \
  "vivid's node has no Video Capture device capability"

note "ALSA cards"
assert_ok arecord -l
cat last.stdout >&2
assert_stdout_contains "[Loopback]"
assert_stdout_contains "[Dummy]"
loopback=$(alsa_card Loopback)
dummy=$(alsa_card Dummy)
note "Loopback is card $loopback, Dummy is card $dummy"
[[ -c /dev/snd/pcmC${loopback}D1c ]] || fail "no capture node /dev/snd/pcmC${loopback}D1c"

note "a 1 kHz tone through the loopback"
# 1 kHz square wave, S16_LE stereo at 48 kHz: 24 frames at +8000, 24 at -8000;
# one period (192 bytes) doubled 12 times: 4096 periods, about 4 s.
high=$(printf '\\x40\\x1f\\x40\\x1f%.0s' {1..24})
low=$(printf '\\xc0\\xe0\\xc0\\xe0%.0s' {1..24})
printf "$high$low" >tone.raw
for _ in {1..12}; do cat tone.raw tone.raw >tone.tmp && mv tone.tmp tone.raw; done
assert_eq $((192 * 4096)) "$(stat -c %s tone.raw)" "tone size"
aplay -q -D hw:Loopback,0,0 -t raw -f S16_LE -r 48000 -c 2 tone.raw &
player=$!
sleep 0.5
assert_ok arecord -q -D hw:Loopback,1,0 -d 1 -f S16_LE -r 48000 -c 2 -t wav loop.wav
kill "$player" 2>/dev/null || true
wait "$player" 2>/dev/null || true
assert_file loop.wav
size=$(stat -c %s loop.wav)
note "recorded $size bytes"
((size >= 44 + 48000 * 4 * 9 / 10)) || fail "recording too short: $size bytes for 1 s of 48 kHz stereo"
peak=$(pcm_peak loop.wav)
note "peak sample value: $peak"
((peak > 0)) || fail "the loopback recording is silent"
assert_eq 8000 "$peak" "peak of the recorded square wave (played at +/-8000)"

note "snd-dummy captures silence"
assert_ok arecord -q -D "hw:Dummy,0,0" -d 1 -f S16_LE -r 48000 -c 2 -t wav dummy.wav
assert_file dummy.wav
peak=$(pcm_peak dummy.wav)
note "dummy peak: $peak"
assert_eq 0 "$peak" "snd-dummy (fake_buffer=0) should capture silence"
