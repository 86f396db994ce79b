#!/usr/bin/env python3
"""Plays a camera of capctl serve over WHEP with aiortc, a WebRTC stack no one here wrote.

aiortc (PyPI, in .venv-test/; its own ICE, DTLS, SRTP and RTP, FFmpeg's decoders through
PyAV) makes a receive-only offer of video and audio; the offer goes to
/devices/CAMERA/whep, the answer comes back, and the tracks are read: decoded
video frames and audio frames. At the end the Location is DELETEd.

  .venv-test/bin/python whep_aiortc.py --url http://127.0.0.1:PORT [--token TOKEN] [--camera 0]

It checks that the answer is 201 with a Location, that at least 30 video frames
of the camera's size decode and at least 1 s of audio arrives (within 30 s),
that each stream's RTCP sender reports advance their RTP time at its clock rate
(90 kHz, 48 kHz) as their NTP time advances, and that the DELETE answers 200.
With --capture-clock (the service runs with CAPCTL_WEBRTC_RTP_CLOCK=capture, RTP
timestamps on its CLOCK_MONOTONIC, which this machine shares), the reports of
audio and video place the capture clock at the same NTP time: a player that
aligns them by their reports presents them as they were captured. The last lines are `RESULT {json}` and
`aiortc: N passed, N failed`; exit status 0 when every check passed.
"""

import argparse
import asyncio
import json
import os
import sys
import time

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.rtcrtpreceiver import RTCRtpReceiver
from aiortc.rtp import RtcpSrPacket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import page_check  # noqa: E402
from page_check import check  # noqa: E402
from whep_check import request  # noqa: E402

# Each stream's sender reports as they arrive: (NTP time in seconds since 1970, RTP time).
# aiortc keeps only the newest in its stats, so its handler is wrapped.
SENDER_REPORTS = {"video": [], "audio": []}
RATES = {"video": 90000, "audio": 48000}
NTP_TO_UNIX = 2208988800
_handle_rtcp = RTCRtpReceiver._handle_rtcp_packet


async def _note_sender_report(self, packet):
    if isinstance(packet, RtcpSrPacket) and self.track is not None:
        ntp = packet.sender_info.ntp_timestamp
        SENDER_REPORTS[self.track.kind].append(((ntp >> 32) + (ntp & 0xFFFFFFFF) / 2**32 - NTP_TO_UNIX, packet.sender_info.rtp_timestamp))
    return await _handle_rtcp(self, packet)


RTCRtpReceiver._handle_rtcp_packet = _note_sender_report


def check_sender_reports(capture_clock):
    """Each stream's reports advance RTP time with NTP time; with the capture clock, both streams agree."""
    if not check(all(len(reports) >= 2 for reports in SENDER_REPORTS.values()), "sender reports of video and audio arrive",
                 ", ".join(f"{len(reports)} of {kind}" for kind, reports in SENDER_REPORTS.items())):
        return
    for kind, reports in SENDER_REPORTS.items():
        (ntp0, rtp0), (ntp1, rtp1) = reports[0], reports[-1]
        rtp_seconds = ((rtp1 - rtp0) % 2**32) / RATES[kind]
        check(ntp1 - ntp0 >= 1.5 and abs(rtp_seconds - (ntp1 - ntp0)) <= 0.010,
              f"the {kind} sender reports advance RTP time at {RATES[kind]} Hz",
              f"{len(reports)} reports: {ntp1 - ntp0:.3f} s of NTP time, {rtp_seconds:.3f} s of RTP time")
    if not capture_clock:
        return
    epochs = {}
    for kind, reports in SENDER_REPORTS.items():
        ntp, rtp = reports[-1]
        # The RTP time unwrapped: the capture clock is this machine's CLOCK_MONOTONIC, now.
        ticks = time.clock_gettime(time.CLOCK_MONOTONIC) * RATES[kind]
        rtp += round((ticks - rtp) / 2**32) * 2**32
        epochs[kind] = ntp - rtp / RATES[kind]
    check(abs(epochs["audio"] - epochs["video"]) <= 0.005, "audio and video sender reports are on one timeline (the capture clock's)",
          f"capture clock's zero at NTP {epochs['video']:.4f} (video), {epochs['audio']:.4f} (audio)")


async def play(args):
    base = args.url.rstrip("/")
    auth = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    pc.addTransceiver("audio", direction="recvonly")
    counts = {"video": 0, "audio_samples": 0, "size": None}
    readers = []

    async def read(track):
        while True:
            try:
                frame = await track.recv()
            except Exception:
                return
            if track.kind == "video":
                counts["video"] += 1
                counts["size"] = [frame.width, frame.height]
            else:
                counts["audio_samples"] += frame.samples

    @pc.on("track")
    def on_track(track):
        readers.append(asyncio.ensure_future(read(track)))

    await pc.setLocalDescription(await pc.createOffer())
    status, headers, text = await asyncio.to_thread(
        request, f"{base}/devices/{args.camera}/whep", "POST", pc.localDescription.sdp, {"Content-Type": "application/sdp", **auth})
    location = headers.get("Location") or headers.get("location") or ""
    if not check(status == 201 and location.startswith("/whep/"), "the offer is answered 201 with a Location", f"{status} {text[:200]}"):
        await pc.close()
        return {}
    await pc.setRemoteDescription(RTCSessionDescription(sdp=text, type="answer"))
    for _ in range(300):
        if counts["video"] >= 30 and counts["audio_samples"] >= 48000:
            break
        await asyncio.sleep(0.1)
    check(counts["video"] >= 30, "video frames decode", json.dumps(counts))
    check(counts["size"] == [args.width, args.height], f"at the camera's size ({args.width}x{args.height})", json.dumps(counts))
    check(counts["audio_samples"] >= 48000, "at least a second of audio arrives", json.dumps(counts))
    # Reports come every second or so: wait for two seconds of them of each stream.
    for _ in range(200):
        if all(len(r) >= 2 and r[-1][0] - r[0][0] >= 1.5 for r in SENDER_REPORTS.values()):
            break
        await asyncio.sleep(0.1)
    check_sender_reports(args.capture_clock)
    status, _, _ = await asyncio.to_thread(request, base + location, "DELETE", None, auth)
    check(status == 200, "DELETE of the Location ends the viewer", f"{status}")
    await pc.close()
    for reader in readers:
        reader.cancel()
    return counts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--camera", default="0")
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--capture-clock", action="store_true",
                        help="the service runs with CAPCTL_WEBRTC_RTP_CLOCK=capture: check that audio and video reports agree")
    args = parser.parse_args()
    result = asyncio.run(play(args))
    print("RESULT " + json.dumps(result), flush=True)
    print(f"aiortc: {page_check.passed} passed, {page_check.failed} failed", flush=True)
    return 0 if page_check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
