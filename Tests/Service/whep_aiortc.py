#!/usr/bin/env python3
"""Plays a camera of capctl serve over WHEP with aiortc, a WebRTC stack no one here wrote.

aiortc (PyPI, in .venv-test/; its own ICE, DTLS, SRTP and RTP, FFmpeg's decoders through
PyAV) makes a receive-only offer of video and audio; the offer goes to
/devices/CAMERA/whep, the answer comes back, and the tracks are read: decoded
video frames and audio frames. At the end the Location is DELETEd.

  .venv-test/bin/python whep_aiortc.py --url http://127.0.0.1:PORT [--token TOKEN] [--camera 0]

It checks that the answer is 201 with a Location, that at least 30 video frames
of the camera's size decode and at least 1 s of audio arrives (within 30 s),
and that the DELETE answers 200. The last lines are `RESULT {json}` and
`aiortc: N passed, N failed`; exit status 0 when every check passed.
"""

import argparse
import asyncio
import json
import os
import sys

from aiortc import RTCPeerConnection, RTCSessionDescription

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import page_check  # noqa: E402
from page_check import check  # noqa: E402
from whep_check import request  # noqa: E402

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
    args = parser.parse_args()
    result = asyncio.run(play(args))
    print("RESULT " + json.dumps(result), flush=True)
    print(f"aiortc: {page_check.passed} passed, {page_check.failed} failed", flush=True)
    return 0 if page_check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
