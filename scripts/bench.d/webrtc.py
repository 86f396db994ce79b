#!/usr/bin/env python3
"""The measurements of scripts/bench webrtc (its header says what they are)."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "Service"))
from page_check import Browser  # noqa: E402
from whep_check import PLAY, STATS  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_percent(pid, seconds):
    start, began = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - start) / (time.monotonic() - began)


def mjpeg_bytes_per_second(base, seconds):
    """Bytes one /stream.mjpg client at 1280 px, 30 fps receives per second, after 2 s."""
    total = [0]
    stop = threading.Event()

    def read():
        with urllib.request.urlopen(base + "/stream.mjpg?width=1280&fps=30", timeout=30) as stream:
            time.sleep(0)
            warm = time.monotonic() + 2
            while not stop.is_set():
                chunk = stream.read(65536)
                if not chunk:
                    break
                if time.monotonic() >= warm:
                    total[0] += len(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    time.sleep(2)
    before, began = total[0], time.monotonic()
    time.sleep(seconds)
    rate = (total[0] - before) / (time.monotonic() - began)
    stop.set()
    return rate


# What the first viewer's transport received: whole SRTP and SRTCP packets (RTP headers
# included), not only the media in them; IP and UDP headers are not counted, as HTTP's TCP
# and IP headers are not counted on the MJPEG side.
TRANSPORT_BYTES = """(async () => { let bytes = 0;
  (await window.viewers[0].pc.getStats()).forEach(s => { if (s.type === 'transport') bytes += s.bytesReceived || 0; });
  return bytes; })()"""

FRAME_TIMES = """(async () => {
  const v = document.querySelector('video'); const out = []; const end = performance.now() + %d;
  await new Promise(resolve => {
    const cb = (now, m) => { out.push([m.rtpTimestamp, m.presentationTime]); if (performance.now() < end) v.requestVideoFrameCallback(cb); else resolve(); };
    v.requestVideoFrameCallback(cb);
  });
  return JSON.stringify({origin: performance.timeOrigin, frames: out});
})()"""


# Audio against video, as the first viewer presents them: every 20 ms the audio receiver's newest
# synchronization source (the RTP timestamp of the audio played out last, and when) and the
# video's estimated playout, with each stream's playout estimate from getStats
# (estimatedPlayoutTimestamp: the sender's NTP time, by its RTCP sender reports, of what plays now).
AV_SAMPLES = """(async () => {
  const v = window.viewers[0]; const out = []; const end = performance.now() + %d;
  const audio = v.pc.getReceivers().find(r => r.track.kind === 'audio');
  while (performance.now() < end) {
    const sources = audio.getSynchronizationSources();
    const playout = {};
    (await v.pc.getStats()).forEach(s => { if (s.type === 'inbound-rtp') playout[s.kind] = s.estimatedPlayoutTimestamp; });
    out.push({audioRtp: sources.length ? sources[0].rtpTimestamp : null, audioAt: sources.length ? sources[0].timestamp : null,
              now: Date.now(), audioPlayout: playout.audio, videoPlayout: playout.video});
    await new Promise(r => setTimeout(r, 20));
  }
  return JSON.stringify(out);
})()"""


def unwrap(rtp, rate):
    """A 32-bit RTP timestamp on the capture clock (CAPCTL_WEBRTC_RTP_CLOCK=capture) as its capture time, in ms since 1970."""
    now_ticks = time.monotonic_ns() * rate // 1_000_000_000
    wraps = round((now_ticks - rtp) / 2**32)
    return (rtp + wraps * 2**32) * 1000.0 / rate + (time.time_ns() - time.monotonic_ns()) / 1e6


def audio_against_video(browser, seconds, video_latencies):
    """How much later than video audio is presented, relative to their capture (ms, + audio late):
    the audio's capture-to-playout (its synchronization source) against the video's glass to
    glass, and Chromium's own playout estimates of the two streams."""
    got = json.loads(browser.evaluate(AV_SAMPLES % int(seconds * 1000), timeout=seconds + 60))
    audio = [s["audioAt"] - unwrap(s["audioRtp"], 48000) for s in got if s["audioRtp"] is not None and s["audioAt"]]
    estimated = [s["videoPlayout"] - s["audioPlayout"] for s in got if s.get("videoPlayout") and s.get("audioPlayout")]
    return {
        "audioLatency": statistics.median(audio) if audio else float("nan"),
        "avOffset": (statistics.median(audio) - statistics.median(video_latencies)) if audio else float("nan"),
        "avEstimated": statistics.median(estimated) if estimated else float("nan"),
        "avEstimatedP95": sorted(abs(e) for e in estimated)[int(0.95 * (len(estimated) - 1))] if estimated else float("nan"),
    }


def glass_to_glass(browser, seconds):
    """Capture to presentation of each frame the first viewer shows, in ms: the RTP timestamp
    (on the capture clock, CAPCTL_WEBRTC_RTP_CLOCK=capture) against requestVideoFrameCallback's
    presentationTime, both moved to the wall clock."""
    got = json.loads(browser.evaluate(FRAME_TIMES % int(seconds * 1000), timeout=seconds + 60))
    return [got["origin"] + presented - unwrap(rtp, 90000) for rtp, presented in got["frames"] if rtp is not None]


def record_beside(base, folder, events, seconds):
    """A recording of the camera (H.264 at its defaults, the encoder the viewers share) while
    they watch: its finished event's frames and drops, and the frames ffprobe counts in the file."""
    request = urllib.request.Request(base + "/recordings", data=json.dumps({"file": "beside.mp4", "maxDuration": seconds}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        recording = json.loads(response.read())["id"]
    deadline = time.monotonic() + seconds + 60
    finished = None
    while finished is None and time.monotonic() < deadline:
        finished = next((e for e in events if e.get("event") == "finished" and e.get("recording") == recording), None)
        time.sleep(0.1)
    if finished is None:
        raise SystemExit("bench webrtc: the recording beside the viewers did not finish")
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_frames", "-of", "csv=p=0", os.path.join(folder, "beside.mp4")],
                           capture_output=True, text=True, check=True)
    return {"recordedFrames": finished["frames"], "recordedDropped": finished["dropped"], "fileFrames": int(probe.stdout.strip())}


def run_once(capctl, seconds, viewers, glass_seconds):
    folder = tempfile.mkdtemp(prefix="capctl-bench-webrtc-")
    environment = dict(os.environ, CAPCTL_WEBRTC_RTP_CLOCK="capture")
    service = subprocess.Popen([capctl, "serve", "--video", "test-pattern,size=1280x720,fps=30", "--audio", "test-tone",
                                "--listen", "127.0.0.1:0", "--dir", folder, "--max-viewers", str(viewers + 4)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
    try:
        port = None
        for line in service.stdout:
            event = json.loads(line)
            if event.get("event") == "service-started":
                port = event["port"]
                break
        base = f"http://127.0.0.1:{port}"
        events = []
        threading.Thread(target=lambda: [events.append(json.loads(line)) for line in service.stdout if line.startswith("{")],
                         daemon=True).start()
        result = {"cpuNone": cpu_percent(service.pid, seconds)}
        browser = Browser(shutil.which("chromium") or "/usr/bin/chromium")
        try:
            browser.attach()
            browser.send("Page.navigate", {"url": base + "/bench"})
            browser.idle(1.0)
            browser.evaluate(PLAY % {"token": "null", "count": 1, "camera": "0"}, timeout=60)
            browser.idle(4.0)
            first = json.loads(browser.evaluate(STATS))[0]
            first_bytes = browser.evaluate(TRANSPORT_BYTES)
            began = time.monotonic()
            result["cpuOne"] = cpu_percent(service.pid, seconds)
            second = json.loads(browser.evaluate(STATS))[0]
            second_bytes = browser.evaluate(TRANSPORT_BYTES)
            elapsed = time.monotonic() - began
            result["webrtcBytesPerSecond"] = (second_bytes - first_bytes) / elapsed
            result["framesPerSecond"] = (second["frames"] - first["frames"]) / elapsed
            latencies = glass_to_glass(browser, glass_seconds)
            tenth = max(1, len(latencies) // 10)
            result["glassP50"] = statistics.median(latencies)
            result["glassP95"] = sorted(latencies)[int(0.95 * (len(latencies) - 1))]
            result["glassDrift"] = statistics.median(latencies[-tenth:]) - statistics.median(latencies[:tenth])
            result["glassFrames"] = len(latencies)
            result.update(audio_against_video(browser, glass_seconds, latencies))
            browser.evaluate(PLAY.replace("window.viewers = viewers", "window.viewers = window.viewers.concat(viewers)")
                             % {"token": "null", "count": viewers - 1, "camera": "0"}, timeout=120)
            browser.idle(5.0)
            result["cpuMany"] = cpu_percent(service.pid, seconds)
            connected = [s for s in json.loads(browser.evaluate(STATS)) if s["state"] == "connected"]
            result["connected"] = len(connected)
            result.update(record_beside(base, folder, events, seconds))
        finally:
            browser.close()
        result["mjpegBytesPerSecond"] = mjpeg_bytes_per_second(base, seconds)
        return result
    finally:
        service.terminate()
        service.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--capctl", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--glass-seconds", type=float, default=20)
    args = parser.parse_args()
    results = []
    for run in range(args.runs):
        result = run_once(args.capctl, args.seconds, args.viewers, args.glass_seconds)
        result["perFurtherViewer"] = (result["cpuMany"] - result["cpuOne"]) / max(1, args.viewers - 1)
        result["bytesRatio"] = result["webrtcBytesPerSecond"] / result["mjpegBytesPerSecond"]
        results.append(result)
        print(f"run {run + 1}: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items()), flush=True)
    def median(key):
        return statistics.median(r[key] for r in results)
    print(f"medians of {args.runs} runs, {args.seconds:g} s windows, 1280x720 30 fps test pattern with test tone:")
    print(f"  bytes/s: WebRTC {median('webrtcBytesPerSecond'):.0f} (video {median('framesPerSecond'):.1f} fps, with audio), "
          f"/stream.mjpg {median('mjpegBytesPerSecond'):.0f}: ratio {median('bytesRatio'):.3f} (goal <= 0.2)")
    print(f"  glass to glass (capture to presentation in Chromium, one viewer, {args.glass_seconds:g} s): "
          f"p50 {median('glassP50'):.1f} ms, p95 {median('glassP95'):.1f} ms (goal <= 150), "
          f"drift last tenth - first tenth {median('glassDrift'):+.1f} ms")
    print(f"  capctl-serve CPU (% of a core): no viewer {median('cpuNone'):.1f}, 1 viewer {median('cpuOne'):.1f}, "
          f"{args.viewers} viewers {median('cpuMany'):.1f} ({median('connected'):.0f} connected); "
          f"each further viewer {median('perFurtherViewer'):.2f} (goal <= 1)")
    print(f"  audio against video ({args.glass_seconds:g} s, + audio later): audio capture to playout p50 {median('audioLatency'):.1f} ms, "
          f"offset against video's {median('avOffset'):+.1f} ms (goal within 40); Chromium's playout estimates "
          f"video - audio {median('avEstimated'):+.1f} ms, p95 of |offset| {median('avEstimatedP95'):.1f} ms")
    print(f"  recording beside {args.viewers} viewers, {args.seconds:g} s at 30 fps: frames in the file "
          + ", ".join(str(r['fileFrames']) for r in results) + " (finished event: "
          + ", ".join(f"{r['recordedFrames']} frames, {r['recordedDropped']} dropped" for r in results) + ")")


if __name__ == "__main__":
    main()
