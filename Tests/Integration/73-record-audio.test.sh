#!/usr/bin/env bash
# Audio from real ALSA drivers: a 1000 Hz tone played into snd-aloop is in the recording
# (its energy at 1000 Hz); snd-dummy records silence; vivid with snd-aloop starts audio
# and video within one video frame of each other, and their durations agree as closely.
source "$(dirname "$0")/lib.sh"
need ffmpeg ffprobe aplay python3

alsa_card Loopback >/dev/null
alsa_card Dummy >/dev/null
node=$(vivid_capture_node)

# A 1000 Hz sine at ffmpeg's default amplitude (1/8), -3 dB in each of two channels: peak 2896.
# Played over and over for as long as the test runs: on a machine several times slower
# than this one a single 60 s play ran out before the last recording (silence recorded).
ffmpeg -v error -f lavfi -i "sine=frequency=1000:sample_rate=48000" -t 60 -ac 2 -c:a pcm_s16le feed.wav
(
  trap 'kill $player 2>/dev/null; exit 0' TERM
  while :; do
    aplay -q -D hw:Loopback,0,0 feed.wav &
    player=$!
    wait $player || break
  done
) &
feeder=$!
trap 'kill $feeder 2>/dev/null || true' EXIT
sleep 1

# wav_frames WAV / wav_peak WAV: sample frames and the largest absolute sample of a WAV
# file with any header chunks (capctl's carry metadata, so the header is not 44 bytes)
wav_frames() { python3 -c 'import sys, wave; print(wave.open(sys.argv[1]).getnframes())' "$1"; }
wav_peak() {
  python3 -c 'import struct, sys, wave
w = wave.open(sys.argv[1]); raw = w.readframes(w.getnframes())
print(max((abs(v) for v in struct.unpack("<%dh" % (len(raw) // 2), raw)), default=0))' "$1"
}

# tone_ratio WAV HZ: energy at HZ against the mean energy at 20 other frequencies (Goertzel)
tone_ratio() {
  python3 - "$1" "$2" <<'PY'
import math, struct, sys, wave
w = wave.open(sys.argv[1])
rate, channels = w.getframerate(), w.getnchannels()
raw = w.readframes(w.getnframes())
samples = struct.unpack("<%dh" % (len(raw) // 2), raw)[::channels][:rate]
def power(f):
    k = 2 * math.cos(2 * math.pi * f / rate)
    s1 = s2 = 0.0
    for x in samples:
        s1, s2 = x + k * s1 - s2, s1
    return s1 * s1 + s2 * s2 - k * s1 * s2
target = power(float(sys.argv[2]))
others = [power(f) for f in range(1300, 9300, 400)]
print("%.1f" % (target / (sum(others) / len(others) + 1e-9)))
PY
}

note "snd-aloop: the tone is recorded"
assert_ok "$CAPCTL" record --audio hw:Loopback,1,0 --sample-rate 48000 --channels 2 --max-duration 2 --progress json tone.wav
assert_eq '"max-duration"' "$(event_field last.stdout finished reason)"
# The driver stamps each period (with some jitter against the sample count); the cut
# falls inside the one that reaches 2 s. Within 10 ms of the limit.
samples=$(event_field last.stdout finished audioSamples)
within "$samples" 96000 480 || fail "$samples samples recorded for 2 s at 48000 Hz"
assert_eq 48000 "$(ffprobe_value tone.wav a:0 sample_rate)"
in_file=$(wav_frames tone.wav)
within "$in_file" "$samples" 480 || fail "tone.wav holds $in_file samples for 2 s at 48000 Hz"
peak=$(wav_peak tone.wav)
ratio=$(tone_ratio tone.wav 1000)
note "tone.wav: peak $peak, energy at 1000 Hz is $ratio times the mean elsewhere"
((peak > 1000)) || fail "tone.wav peaks at $peak: the tone is missing"
awk -v r="$ratio" 'BEGIN { exit !(r > 1000) }' || fail "no 1000 Hz tone in tone.wav (ratio $ratio)"

note "snd-dummy records silence"
assert_ok "$CAPCTL" record --audio hw:Dummy,0 --sample-rate 48000 --channels 2 --max-duration 1 --progress json dummy.wav
within "$(event_field last.stdout finished audioSamples)" 48000 480 || fail "1 s of snd-dummy is not 48000 samples"
assert_eq 0 "$(wav_peak dummy.wav)"

note "vivid and snd-aloop together"
assert_ok "$CAPCTL" record --video "$node" --size 320x180 --audio hw:Loopback,1,0 --sample-rate 48000 --channels 2 \
  --max-duration 3 --progress json av.mp4
assert_eq '"max-duration"' "$(event_field last.stdout finished reason)"
frame=$(largest_gap av.mp4)
vstart=$(ffprobe_value av.mp4 v:0 start_time)
astart=$(ffprobe_value av.mp4 a:0 start_time)
vdur=$(stream_duration av.mp4 video)
adur=$(stream_duration av.mp4 audio)
note "video starts $vstart s, lasts $vdur s; audio starts $astart s, lasts $adur s; one frame $frame s"
within "$vstart" "$astart" "$frame" || fail "audio starts at $astart s, video at $vstart s: more than a frame ($frame s) apart"
within "$vdur" "$adur" "$frame" || fail "audio lasts $adur s, video $vdur s: more than a frame ($frame s) apart"
ffmpeg -v error -i av.mp4 -map 0:a -ac 2 -c:a pcm_s16le av.wav
ratio=$(tone_ratio av.wav 1000)
note "av.mp4 audio: energy at 1000 Hz is $ratio times the mean elsewhere"
awk -v r="$ratio" 'BEGIN { exit !(r > 100) }' || fail "no 1000 Hz tone in av.mp4 (ratio $ratio)"
