#!/usr/bin/env python3
"""Plays capctl serve's cameras over WHEP in headless Chromium, and checks its refusals.

Chromium (driven as page_check.py drives it, over --remote-debugging-pipe)
opens a page of the service's origin and, from it, does what a WHEP player
does: an RTCPeerConnection with a receive-only video and audio transceiver,
its offer POSTed to /devices/CAMERA/whep, the answer set, and at the end a
DELETE of the Location the service gave. Python's standard library only.

  whep_check.py --url http://127.0.0.1:PORT [--token TOKEN] [--camera 0] [--viewers N]

It checks that:
- the answer is 201 with application/sdp and a Location under /whep/;
- video and audio both flow: getStats' inbound-rtp video framesDecoded and
  audio totalSamplesReceived grow (N viewers at once in one page, each its own);
  with --no-audio (a service without a microphone), video alone;
- the service's /session lists each viewer connected with bytes sent, and
  /metrics counts them (capctl_viewers{transport="webrtc"});
- DELETE of the Location ends a viewer (200; then 404), and the service
  forgets it; a viewer whose browser closes its connection without DELETE is
  ended by the service within 30 s;
- with --token: no token (401), a foreign Origin (403), an unknown camera
  (404), a microphone for a camera (404), a body not declared SDP (415) and
  an offer that is no SDP (400) are refused before any media: no viewer joins.
The last lines are `RESULT {json}` and `whep: N passed, N failed`; exit status
0 when every check passed, 1 when one failed, 2 when the browser could not be driven.
"""

import argparse
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import page_check  # noqa: E402
from page_check import Browser, BrowserError, check  # noqa: E402

def request(url, method="GET", body=None, headers=None):
    """(status, headers, body text) of one request; HTTP errors are answers too."""
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode(errors="replace")


PLAY = """(async () => {
  const token = %(token)s;
  const viewers = [];
  for (let n = 0; n < %(count)d; n++) {
    const pc = new RTCPeerConnection();
    pc.addTransceiver('video', {direction: 'recvonly'});
    pc.addTransceiver('audio', {direction: 'recvonly'});
    const video = document.createElement('video');
    video.muted = true; video.autoplay = true; video.playsInline = true;
    document.body.appendChild(video);
    const stream = new MediaStream();
    pc.ontrack = e => { stream.addTrack(e.track); video.srcObject = stream; };
    await pc.setLocalDescription(await pc.createOffer());
    const headers = {'Content-Type': 'application/sdp'};
    if (token) headers['Authorization'] = 'Bearer ' + token;
    const answer = await fetch('/devices/%(camera)s/whep', {method: 'POST', headers, body: pc.localDescription.sdp});
    const text = await answer.text();
    viewers.push({pc, status: answer.status, type: answer.headers.get('Content-Type'), location: answer.headers.get('Location'), text});
    if (answer.status === 201) await pc.setRemoteDescription({type: 'answer', sdp: text});
  }
  window.viewers = viewers;
  return JSON.stringify(viewers.map(v => ({status: v.status, type: v.type, location: v.location, text: v.status === 201 ? '' : v.text})));
})()"""

STATS = """(async () => {
  const out = [];
  for (const v of window.viewers) {
    const entry = {state: v.pc.connectionState, frames: 0, samples: 0, videoBytes: 0, audioBytes: 0};
    (await v.pc.getStats()).forEach(s => {
      if (s.type !== 'inbound-rtp') return;
      if (s.kind === 'video') { entry.frames = s.framesDecoded || 0; entry.videoBytes = s.bytesReceived || 0; }
      if (s.kind === 'audio') { entry.samples = s.totalSamplesReceived || 0; entry.audioBytes = s.bytesReceived || 0; }
    });
    out.push(entry);
  }
  return JSON.stringify(out);
})()"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--camera", default="0")
    parser.add_argument("--microphone", help="a microphone's id, refused as a camera")
    parser.add_argument("--viewers", type=int, default=1)
    parser.add_argument("--no-audio", action="store_true", help="the service has no microphone: video alone is expected")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    auth = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    result = {}

    def session():
        status, _, body = request(base + "/session", headers=auth)
        return json.loads(body) if status == 200 else {}

    def metric(name, labels):
        status, _, body = request(base + "/metrics", headers=auth)
        for line in body.splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return None

    offer_text = None
    if args.token:
        # Refusals first, with a real offer from the browser below; these need none to be refused.
        joined_before = metric("capctl_webrtc_viewers_total", {"camera": args.camera}) or 0
        sdp = {"Content-Type": "application/sdp"}
        fake_offer = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\n"
        cases = [
            ("no token", f"/devices/{args.camera}/whep", sdp, fake_offer, 401),
            ("a foreign Origin", f"/devices/{args.camera}/whep", {**sdp, **auth, "Origin": "http://evil.example"}, fake_offer, 403),
            ("an unknown camera", "/devices/99/whep", {**sdp, **auth}, fake_offer, 404),
            ("a body not declared SDP", f"/devices/{args.camera}/whep", {"Content-Type": "application/json", **auth}, "{}", 415),
            ("an offer that is no SDP", f"/devices/{args.camera}/whep", {**sdp, **auth}, "hello", 400),
        ]
        if args.microphone:
            cases.append(("a microphone as the camera", f"/devices/{args.microphone}/whep", {**sdp, **auth}, fake_offer, 404))
        for what, path, headers, body, expected in cases:
            status, _, text = request(base + path, "POST", body, headers)
            check(status == expected and text.count("\n") <= 1 and '"error"' in text,
                  f"{what} is refused with {expected}", f"{status} {text[:200]}")
        joined_after = metric("capctl_webrtc_viewers_total", {"camera": args.camera}) or 0
        check(joined_after == joined_before and not session().get("webrtc"),
              "no viewer joined for a refused offer", f"{joined_before} → {joined_after}")

    try:
        browser = Browser(args.chromium)
    except OSError as error:
        print(f"whep: cannot start Chromium: {error}", flush=True)
        return 2
    try:
        browser.attach()
        # A page of the service's origin (a 404 document is one too): the API's Origin rule lets its requests in.
        browser.send("Page.navigate", {"url": base + "/whep-check"})
        browser.wait_for("document.readyState === 'complete' && location.pathname === '/whep-check'", 30, "the page to load")
        answers = json.loads(browser.evaluate(PLAY % {"token": json.dumps(args.token), "count": args.viewers, "camera": args.camera}, timeout=60))
        for n, answer in enumerate(answers):
            check(answer["status"] == 201 and (answer["type"] or "").startswith("application/sdp")
                  and (answer["location"] or "").startswith("/whep/"),
                  f"viewer {n + 1}: the offer is answered 201 with SDP and a Location", json.dumps(answer))
        if not all(a["status"] == 201 for a in answers):
            raise SystemExit(1)

        deadline = time.monotonic() + 30
        stats = []
        while time.monotonic() < deadline:
            stats = json.loads(browser.evaluate(STATS))
            if all(s["frames"] >= 30 and (args.no_audio or s["samples"] >= 48000) for s in stats):
                break
            time.sleep(0.5)
        first = stats
        time.sleep(2)
        later = json.loads(browser.evaluate(STATS))
        for n, (a, b) in enumerate(zip(first, later)):
            check(a["state"] == "connected" and a["frames"] >= 30 and b["frames"] > a["frames"],
                  f"viewer {n + 1}: video is decoded and keeps coming", json.dumps([a, b]))
            if args.no_audio:
                check(b["samples"] == 0, f"viewer {n + 1}: no audio comes from a service without a microphone", json.dumps(b))
            else:
                check(a["samples"] >= 48000 and b["samples"] > a["samples"],
                      f"viewer {n + 1}: audio samples are received and keep coming", json.dumps([a, b]))
        result["frames"] = [s["frames"] for s in later]
        result["samples"] = [s["samples"] for s in later]
        result["videoBytes"] = [s["videoBytes"] for s in later]

        listed = session().get("webrtc", [])
        check(len(listed) == args.viewers and all(v["state"] == "connected" and v["bytesSent"] > 0 and v["framesSent"] > 0 for v in listed),
              "the service lists every viewer connected, with what it sent", json.dumps(listed))
        watching = metric("capctl_viewers", {"camera": args.camera, "transport": "webrtc"})
        check(watching == args.viewers, "/metrics counts the WebRTC viewers", f"capctl_viewers = {watching}")
        sent = metric("capctl_webrtc_sent_bytes_total", {"camera": args.camera}) or 0
        check(sent > 0, "/metrics counts the bytes sent", f"{sent}")

        locations = [a["location"] for a in answers]
        status, _, _ = request(base + locations[0], "DELETE", headers=auth)
        check(status == 200, "DELETE of the Location ends the viewer", f"{status}")
        status, _, _ = request(base + locations[0], "DELETE", headers=auth)
        check(status == 404, "a viewer deleted twice is not found the second time", f"{status}")
        status, headers, _ = request(base + locations[0], "PATCH", "a=candidate", {**auth, "Content-Type": "application/trickle-ice-sdpfrag"})
        check(status == 405, "PATCH (trickle ICE) answers 405", f"{status}")
        left = [v["id"] for v in session().get("webrtc", [])]
        check(locations[0].rsplit("/", 1)[1] not in left and len(left) == args.viewers - 1,
              "the deleted viewer is gone from /session", json.dumps(left))

        # The browser closes the others without DELETE: the service notices on its own.
        browser.evaluate("(() => { window.viewers.slice(1).forEach(v => v.pc.close()); return 'closed'; })()")
        started = time.monotonic()
        while time.monotonic() - started < 30 and session().get("webrtc"):
            time.sleep(0.5)
        gone_after = time.monotonic() - started
        check(not session().get("webrtc"), "viewers whose browser closed are ended by the service within 30 s",
              f"{session().get('webrtc')}")
        result["closedViewersGoneAfter"] = round(gone_after, 1)
    except BrowserError as error:
        print(f"whep: the browser could not be driven: {error}", flush=True)
        return 2
    finally:
        browser.close()
    print("RESULT " + json.dumps(result), flush=True)
    print(f"whep: {page_check.passed} passed, {page_check.failed} failed", flush=True)
    return 0 if page_check.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
