#!/usr/bin/env bash
# capctl serve: time to a recording's first frame and CPU against capctl record; API latency under wrk.
#
# Usage: scripts/bench serve [RUNS] [SECONDS]   (defaults: 5 runs of each case, 10 s recordings)
#        CAPCTL_BENCH_DEVICE=DEV   the camera (default test-pattern; /dev/videoN for a real one)
#
# All on 127.0.0.1, with release builds of capctl and capctl-serve.
# 1. Start: a script decides to record at time T. With the service already running, T is
#    when POST /recordings arrives (its answer's "requested"); for capctl record, T is just
#    before the process is started. The file's first frame's capture time is the segment
#    event's "start". Each run alternates the two; medians, and the service's median against
#    one frame interval. Then the same with a 2 s pre-roll: the service armed with
#    startPaused and preRoll, T the POST /recordings/ID/resume: the file begins before T.
# 2. CPU: the same recording (the camera, H.264 at its defaults, SECONDS long) by capctl
#    record alone (user + system CPU of the process), and by the running service (its CPU
#    between the POST and the finished event, less what the idle service uses in as long:
#    the camera runs for it whether or not it records). Target: at most 1.05 x.
# 3. Load: wrk (2 threads, 16 connections, 30 s) on GET /session while a recording runs:
#    requests a second, median and p99 latency, and the recording's dropped frames (target 0).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
seconds=${2:-10}
device=${CAPCTL_BENCH_DEVICE:-test-pattern}
scratch=${BENCH_SCRATCH:-.build-bench}
for tool in curl wrk python3; do
  command -v "$tool" >/dev/null || { echo "bench serve: no $tool (scripts/setup installs it)" >&2; exit 1; }
done

echo "building capctl and capctl-serve (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
swift build -c release --product capctl-serve --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

work=$(mktemp -d)
trap 'kill "$(cat "$work/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$work"' EXIT

python3 - "$bin/capctl" "$work" "$runs" "$seconds" "$device" <<'PY'
import json, os, signal, statistics, subprocess, sys, time, urllib.request
from datetime import datetime

capctl, work, runs, seconds, device = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
ticks = os.sysconf("SC_CLK_TCK")

def wall(text):
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

def events(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.startswith("{")]

def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks

class Service:
    def __init__(self):
        self.folder = os.path.join(work, "served")
        os.makedirs(self.folder, exist_ok=True)
        self.out = os.path.join(work, "serve.out")
        self.process = subprocess.Popen([capctl, "serve", "--video", device, "--listen", "127.0.0.1:0", "--dir", self.folder],
                                        stdout=open(self.out, "w"), stderr=open(os.path.join(work, "serve.err"), "w"))
        with open(os.path.join(work, "pid"), "w") as f:
            f.write(str(self.process.pid))
        self.port = self.wait(lambda e: e["event"] == "service-started")["port"]

    def wait(self, condition, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for event in events(self.out):
                if condition(event):
                    return event
            time.sleep(0.02)
        raise SystemExit(f"bench serve: no such event within {timeout}s: {open(self.out).read()[-500:]}")

    def post(self, path, body=None):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body or {}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read())

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait()

def record_start(name, extra=()):
    path = os.path.join(work, name)
    out = os.path.join(work, "record.out")
    t = time.time()
    subprocess.run([capctl, "record", "--video", device, "--max-duration", "1", "--progress", "json", *extra, path],
                   stdout=open(out, "w"), stderr=subprocess.DEVNULL, check=True)
    segment = next(e for e in events(out) if e["event"] == "segment")
    os.remove(path)
    return wall(segment["start"]) - t

service = Service()
time.sleep(1)
frame = 1 / 30
latency_service, latency_record, latency_preroll = [], [], []
for run in range(runs):
    created = service.post("/recordings", {"file": f"start-{run}.mp4", "maxDuration": "1s"})
    segment = service.wait(lambda e: e["event"] == "segment" and e.get("recording") == created["id"])
    latency_service.append(wall(segment["start"]) - wall(created["requested"]))
    service.wait(lambda e: e["event"] == "finished" and e.get("recording") == created["id"])
    armed = service.post("/recordings", {"file": f"preroll-{run}.mp4", "startPaused": True, "preRoll": "2s", "maxDuration": "3s"})
    time.sleep(2.5)
    t = time.time()
    service.post(f"/recordings/{armed['id']}/resume")
    segment = service.wait(lambda e: e["event"] == "segment" and e.get("recording") == armed["id"])
    latency_preroll.append(wall(segment["start"]) - t)
    print(f"start run {run + 1}: service {latency_service[-1] * 1000:.1f} ms, pre-roll {latency_preroll[-1] * 1000:.0f} ms", file=sys.stderr)
service.stop()
for run in range(runs):
    latency_record.append(record_start(f"record-{run}.mp4"))
    print(f"start run {run + 1}: record {latency_record[-1] * 1000:.1f} ms", file=sys.stderr)

# CPU of one recording.
service = Service()
time.sleep(2)
cpu_service, cpu_record = [], []
for run in range(runs):
    idle_start, idle_t = cpu(service.process.pid), time.time()
    time.sleep(3)
    idle_rate = (cpu(service.process.pid) - idle_start) / (time.time() - idle_t)
    before, t = cpu(service.process.pid), time.time()
    created = service.post("/recordings", {"file": f"cpu-{run}.mp4", "maxDuration": f"{seconds}s"})
    service.wait(lambda e: e["event"] == "finished" and e.get("recording") == created["id"], timeout=seconds + 30)
    used = cpu(service.process.pid) - before - idle_rate * (time.time() - t)
    cpu_service.append(used)
    start = os.times()
    subprocess.run([capctl, "record", "--video", device, "--max-duration", str(seconds), "--progress", "json",
                    os.path.join(work, f"cpu-record-{run}.mp4")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    end = os.times()
    cpu_record.append(end.children_user + end.children_system - start.children_user - start.children_system)
    print(f"cpu run {run + 1}: service {cpu_service[-1]:.3f} s (idle {idle_rate:.3f} s/s), record {cpu_record[-1]:.3f} s", file=sys.stderr)

# API latency under load while recording.
created = service.post("/recordings", {"file": "load.mp4", "maxDuration": "32s"})
report = subprocess.run(["wrk", "-t", "2", "-c", "16", "-d", "30s", "--latency", f"http://127.0.0.1:{service.port}/session"],
                        capture_output=True, text=True, check=True).stdout
finished = service.wait(lambda e: e["event"] == "finished" and e.get("recording") == created["id"], timeout=60)
service.stop()

def latency(label):
    for line in report.splitlines():
        parts = line.split()
        if parts and parts[0] == label:
            value = parts[1]
            for unit, scale in (("us", 1e-3), ("ms", 1), ("s", 1e3)):
                if value.endswith(unit):
                    return float(value[: -len(unit)]) * scale
    return float("nan")

rate = next((l.split()[1] for l in report.splitlines() if l.startswith("Requests/sec")), "?")
m = statistics.median
print()
print(f"start (first frame's capture time - request), test camera {device}, {runs} runs, medians:")
print(f"  service running            {m(latency_service) * 1000:8.1f} ms   ({m(latency_service) / frame:.2f} frame intervals at 30 fps)")
print(f"  capctl record started      {m(latency_record) * 1000:8.1f} ms   (service / record = {m(latency_service) / m(latency_record):.3f})")
print(f"  service, 2 s pre-roll      {m(latency_preroll) * 1000:8.1f} ms   (negative: the file begins before the resume)")
print(f"CPU of one {seconds:.0f} s recording, medians: service {m(cpu_service):.3f} s, record {m(cpu_record):.3f} s, "
      f"ratio {m(cpu_service) / m(cpu_record):.3f}")
print(f"GET /session under wrk (2 threads, 16 connections, 30 s) while recording: {rate} requests/s, "
      f"median {latency('50%'):.2f} ms, p99 {latency('99%'):.2f} ms; the recording: {finished['frames']} frames, "
      f"dropped {finished['dropped']}")
PY
