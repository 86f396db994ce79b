#!/usr/bin/env bash
# capctl serve's WebRTC (WHEP) view: bytes per second against /stream.mjpg, glass to glass, the
# service's CPU per viewer, audio against video, a recording beside the viewers.
#
# Usage: scripts/bench webrtc [RUNS] [SECONDS] [VIEWERS] [GLASS]   (defaults: 3 runs, 10 s windows,
#        20 viewers, 20 s of glass-to-glass; 600 shows drift over ten minutes)
#        CAPCTL_BENCH_DEBUG=1   use the debug build (.build/debug) instead of building release
#
# All on 127.0.0.1. The camera is capctl's test-pattern at 1280x720, 30 fps, with test-tone.
# The viewers are RTCPeerConnections in one headless Chromium page (Debian's), each a WHEP
# player of camera 0 with sound; Chromium's own CPU is not counted. Per run:
# 1. Bytes per second: what one WebRTC viewer's transport received (getStats' transport
#    bytesReceived: SRTP and SRTCP packets whole, video and audio) over the window, against what one client of /stream.mjpg?width=1280&fps=30 (the
#    same picture, size and rate) received over the same window. Goal: WebRTC at most 1/5.
# 2. Glass to glass: each frame one viewer presents (requestVideoFrameCallback's
#    presentationTime) against its capture time, over GLASS seconds: p50, p95, and the drift
#    (median of the last tenth of the frames minus that of the first). The service runs with
#    CAPCTL_WEBRTC_RTP_CLOCK=capture, which starts RTP timestamps on the capture clock (ticks
#    of CLOCK_MONOTONIC, 90 kHz for video, 48 kHz for audio) instead of at random, so the page
#    can tell each frame's capture time. Goal: p95 at most 150 ms, no drift. (The player
#    delays video to present it with the audio, by the RTCP sender reports: in the first
#    seconds the latency grows while that alignment settles.)
# 3. CPU of capctl-serve (utime + stime from /proc/PID/stat, % of one core) over a window with
#    no viewer, with 1, and with VIEWERS: the cost of the first viewer (the shared H.264 and
#    Opus encoders start) and of each further one ((VIEWERS - 1) - 1 viewer) / (VIEWERS - 1).
#    Goal: each further viewer at most 1 % of a core.
# 4. Audio against video, as the first viewer presents them, over GLASS seconds: every 20 ms,
#    the audio receiver's synchronization source (the RTP timestamp of the audio played out
#    last, on the capture clock, and when) gives audio's capture-to-playout; against video's
#    glass to glass (2.), the offset (+: audio later). Beside it, Chromium's own view: its
#    playout estimates of the two streams (getStats' estimatedPlayoutTimestamp, the sender's
#    clock by its RTCP sender reports), video minus audio. Goal: within 40 ms.
# 5. A recording of the camera (POST /recordings, H.264 at its defaults: the encoder the viewers
#    share) for SECONDS while the VIEWERS watch: the frames ffprobe counts in the file, and the
#    finished event's frames and drops. Goal: no frame lost (30 a second).
# Prints each run's figures, then the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
seconds=${2:-10}
viewers=${3:-20}
glass=${4:-20}
source scripts/bench.d/common.bash
bin=$(service_binaries)
exec python3 scripts/bench.d/webrtc.py --capctl "$bin/capctl" --runs "$runs" --seconds "$seconds" --viewers "$viewers" --glass-seconds "$glass"
