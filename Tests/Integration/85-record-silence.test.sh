#!/usr/bin/env bash
# The microphone watchdog on real ALSA drivers: snd-dummy (silence) gives one audio-silent
# after --silence-timeout and its levels read the floor (-160 dBFS); into snd-aloop, a
# feed that is silent for 6 s and then a 1000 Hz tone at -6 dBFS gives audio-silent, then
# audio-restored where the tone begins in the recorded file (measured on the capture
# clock), and levels of -6 dBFS peak, -9 dBFS RMS once it plays.
source "$(dirname "$0")/lib.sh"
need ffmpeg aplay python3

alsa_card Loopback >/dev/null
alsa_card Dummy >/dev/null

# events FILE NAME: the NAME events of an NDJSON file, one JSON object a line
events() {
  python3 -c 'import json, sys
for l in open(sys.argv[1]):
    if l.strip().startswith("{") and json.loads(l).get("event") == sys.argv[2]: print(l.strip())' "$1" "$2"
}

# seconds_between A B: B - A in seconds, for two event times (UTC, ISO 8601 with milliseconds)
seconds_between() {
  python3 -c 'import sys, datetime
t = [datetime.datetime.strptime(v.strip("\""), "%Y-%m-%dT%H:%M:%S.%fZ") for v in sys.argv[1:3]]
print("%.3f" % (t[1] - t[0]).total_seconds())' "$1" "$2"
}

# levels_of FILE: the last progress event's audioLevels of microphone 1, as "PEAKS RMS"
levels_of() {
  python3 -c 'import json, sys
p = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{") and json.loads(l).get("event") == "progress"]
m = p[-1]["audioLevels"][0]
print(",".join("%g" % v for v in m["peak"]), ",".join("%g" % v for v in m["rms"]))' "$1"
}

dummy() {
  assert_ok "$CAPCTL" record --audio hw:Dummy,0 --sample-rate 48000 --channels 2 --silence-timeout 1 \
    --max-duration 3 --progress json --progress-interval 0.5 dummy.wav
  cp last.stdout dummy.events
  assert_eq 1 "$(events dummy.events audio-silent | wc -l)" "audio-silent events"
  assert_eq 0 "$(events dummy.events audio-restored | wc -l)" "audio-restored events"
  assert_eq '"hw:Dummy,0"' "$(event_field dummy.events audio-silent device)"
  assert_eq 1 "$(event_field dummy.events audio-silent microphone)"
  assert_eq -60 "$(event_field dummy.events audio-silent threshold)"
  local start since told
  start=$(event_field dummy.events segment start)
  since=$(event_field dummy.events audio-silent since)
  told=$(event_field dummy.events audio-silent time)
  note "silent since $(seconds_between "$start" "$since") s into the file, told $(seconds_between "$since" "$told") s later"
  # Silent from the first period; told once a second of it had been captured (and soon after).
  within "$(seconds_between "$start" "$since")" 0 0.1 || fail "silence began $(seconds_between "$start" "$since") s after the file's start"
  awk -v d="$(seconds_between "$since" "$told")" 'BEGIN { exit !(d >= 0.95 && d < 2) }' ||
    fail "audio-silent came $(seconds_between "$since" "$told") s after the silence began, not after 1 s"
  assert_eq "-160,-160 -160,-160" "$(levels_of dummy.events)" "snd-dummy's levels"
  assert_eq '"max-duration"' "$(event_field dummy.events finished reason)"
}

loopback() {
  # 8 s of digital silence, then a 1000 Hz sine at half of full scale (-6.02 dBFS) in each of
  # two channels (made as two: ffmpeg's -ac 2 would put a mono sine 3 dB lower in each).
  # The feed starts once the recording has (a loopback capture before its playback runs reads
  # silence too): however late a busy machine starts capctl, the silence is recorded.
  local tone='if(gte(t\,6)\,0.5*sin(2*PI*1000*t)\,0)'
  ffmpeg -v error -f lavfi -i "aevalsrc=exprs=$tone|$tone:s=48000:d=30" -c:a pcm_s16le feed.wav
  "$CAPCTL" record --audio hw:Loopback,1,0 --sample-rate 48000 --channels 2 --silence-timeout 1 \
    --max-duration 14 --progress json --progress-interval 0.5 late.wav >late.events 2>late.stderr &
  local recorder=$!
  wait_record_event late.events started 60
  aplay -q -D hw:Loopback,0,0 feed.wav &
  local feeder=$!
  trap "kill $feeder $recorder 2>/dev/null || true" EXIT
  wait $recorder || { cat late.stderr >&2; fail "record exited with $?"; }
  kill $feeder 2>/dev/null || true
  assert_eq 1 "$(events late.events audio-silent | wc -l)" "audio-silent events"
  assert_eq 1 "$(events late.events audio-restored | wc -l)" "audio-restored events"
  local start since silent_for onset
  start=$(event_field late.events segment start)
  since=$(event_field late.events audio-restored since)
  silent_for=$(event_field late.events audio-restored silentFor)
  assert_eq "$since" "$(event_field late.events audio-silent since)" "the silence's start"
  # Where the tone begins in the file: its first sample at or above -60 dBFS (33 of 32768).
  onset=$(python3 -c 'import struct, sys, wave
w = wave.open(sys.argv[1]); raw = w.readframes(w.getnframes())
s = struct.unpack("<%dh" % (len(raw) // 2), raw)
print("%.4f" % (next(i for i, v in enumerate(s) if abs(v) >= 33) // 2 / w.getframerate()))' late.wav)
  local told
  told=$(python3 -c 'print("%.4f" % (float(__import__("sys").argv[1]) + float(__import__("sys").argv[2])))' \
    "$(seconds_between "$start" "$since")" "$silent_for")
  note "silent for $silent_for s from $(seconds_between "$start" "$since") s into the file: sound at $told s; the tone begins at $onset s in late.wav"
  # The feed's 6 s of silence and whatever the capture read before the feed began.
  awk -v s="$silent_for" 'BEGIN { exit !(s >= 1 && s <= 13) }' || fail "silentFor $silent_for s: not the feed's silence"
  # To the buffer: the sound returned in the buffer read where the tone begins (about 20 ms,
  # several periods when the reader fell behind), stamped with the driver's jitter.
  awk -v t="$told" -v o="$onset" 'BEGIN { exit !(t <= o + 0.03 && o - t < 0.25) }' ||
    fail "audio-restored puts the sound at $told s; late.wav has it at $onset s"
  local levels
  levels=$(levels_of late.events)
  note "levels once the tone plays: $levels"
  python3 -c 'import sys
peaks, rms = ([float(v) for v in part.split(",")] for part in sys.argv[1].split())
sys.exit(not (all(abs(p + 6.02) <= 0.2 for p in peaks) and all(abs(r + 9.03) <= 0.2 for r in rms)))' "$levels" ||
    fail "levels $levels: not a -6 dBFS sine (peak -6.02, RMS -9.03)"
}

check "snd-dummy: silence is told after the timeout, at the floor level" dummy
check "snd-aloop: a tone after silence is told restored where it begins in the file" loopback
checks_done
