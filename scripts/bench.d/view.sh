#!/usr/bin/env bash
# capctl serve's live view (/stream.mjpg): CPU against ffmpeg serving it, 50 viewers against 1, beside a recording; latency.
#
# Usage: scripts/bench view [RUNS] [SECONDS] [VIEWERS]   (defaults: 3 runs, 12 s windows, 50 viewers)
#        CAPCTL_BENCH_FFMPEG_VF=FILTERS   ffmpeg's filters (default fps=15,scale=640:360)
#        CAPCTL_BENCH_FFMPEG_Q=N          ffmpeg's -q:v (default: chosen to match capctl's JPEG size)
#
# All on 127.0.0.1, with release builds of capctl and capctl-serve; the view is always
# /stream.mjpg?width=640&fps=15 (640x360 at 15 fps, quality 75) of a 1280x720 30 fps camera.
# The CPU of a process is utime + stime from /proc/PID/stat (`capctl serve` execs
# capctl-serve, so the PID stays) over a window, as % of one core; the viewers are asyncio
# clients in this script's own process (not measured) that count the parts, their bytes and
# the latency (arrival - X-Timestamp, the frame's capture time; ffmpeg sends none). A window
# starts once every viewer has a picture, plus 2 s. The service's CPU always includes its
# camera: drawing the test pattern or reading the file, which it does whether anyone watches
# or not; in ratios 2 and 3 that part is the same on both sides.
# 1. One viewer, capctl serve against ffmpeg serving the same view to the same client:
#      ffmpeg -re INPUT -vf fps=15,scale=640:360 -r 15 -q:v Q -f mpjpeg -listen 1 http://127.0.0.1:PORT/view.mjpg
#    a. test source: capctl's test-pattern (drawn inside capctl) against lavfi testsrc2
#       (drawn inside ffmpeg), both 1280x720 at 30 fps: different pictures, the same work kind.
#    b. the same input: a 1280x720 30 fps MJPEG .mkv of testsrc2 (made once in the scratch
#       folder), capctl --video file:PATH against ffmpeg -re -i PATH. capctl picks the 15 fps it
#       shows before decoding; ffmpeg decodes all 30 (it cannot skip them).
#    fps=15 comes before scale so ffmpeg, like capctl, scales only the frames it sends (the
#    issue's `-vf scale=640:360 -r 15` scales all 30 and drops half afterwards:
#    CAPCTL_BENCH_FFMPEG_VF=scale=640:360 measures that). Q: the -q:v whose JPEGs are nearest
#    capctl's in size (the same bytes to encode and send), found by encoding the input's first
#    2 + SECONDS s at q 2, 3 …: capctl's quality 75 is qscale 2+round(25*29/99) = 9 on paper,
#    but its sizes are what qscale 2 gives as long as its JPEG encoder's frames carry no quality.
#    Target: capctl at most 0.80 x ffmpeg.
# 2. VIEWERS viewers of the view against one (case 1a's service and view). Target: at most 1.30 x.
# 3. A recording (POST /recordings {"file", "maxDuration": SECONDS}, H.264 at its defaults)
#    with one viewer of the view against the recording alone: the service's CPU from the POST
#    to its finished event. Target: at most 1.15 x.
# 4. Latency from a frame's capture to its JPEG at the client: median and p99 over every
#    picture of every run, for 1a, 1b, 2 (all viewers) and 3.
# Runs interleave the cases (each run in the other order than the last), and capctl's test
# service is stopped while ffmpeg runs. Medians over the runs; ratios are of the medians.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
seconds=${2:-12}
viewers=${3:-50}
scratch=${BENCH_SCRATCH:-.build-bench}
for tool in ffmpeg python3; do
  command -v "$tool" >/dev/null || { echo "bench view: no $tool (scripts/setup installs it)" >&2; exit 1; }
done

echo "building capctl and capctl-serve (release)..." >&2
swift build -c release --product capctl --scratch-path "$scratch" >&2
swift build -c release --product capctl-serve --scratch-path "$scratch" >&2
bin=$(swift build -c release --scratch-path "$scratch" --show-bin-path)

# The file both sides read in 1b: long enough for a service's start, the warm-up and a window.
length=$((seconds + 15))
input="$scratch/bench-view/testsrc2-1280x720-30fps-${length}s.mkv"
if [[ ! -f $input ]]; then
  echo "making $input..." >&2
  mkdir -p "$(dirname "$input")"
  ffmpeg -hide_banner -loglevel error -nostdin -f lavfi -i "testsrc2=size=1280x720:rate=30" -t "$length" \
    -c:v mjpeg -q:v 3 -pix_fmt yuvj420p -y "$input.part.mkv"
  mv "$input.part.mkv" "$input"
fi

work=$(mktemp -d)
cleanup() {
  # The processes the benchmark started, should it end early.
  [[ -f $work/pids ]] && while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
  rm -rf "$work"
}
trap cleanup EXIT

python3 - "$bin/capctl" "$work" "$runs" "$seconds" "$viewers" "$(realpath "$input")" <<'PY'
import asyncio, json, os, signal, socket, statistics, subprocess, sys, time, urllib.request

capctl, work, runs, seconds, viewers, input_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ticks = os.sysconf("SC_CLK_TCK")
warmup = 2.0
view = "/stream.mjpg?width=640&fps=15"
vf = os.environ.get("CAPCTL_BENCH_FFMPEG_VF", "fps=15,scale=640:360")
fixed_q = os.environ.get("CAPCTL_BENCH_FFMPEG_Q")
pattern = "test-pattern,size=1280x720,fps=30"
sources = {"test": ["-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30"], "file": ["-i", input_file]}

def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / ticks

def spawn(args, name):
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=open(os.path.join(work, f"{name}.out"), "w"),
                               stderr=open(os.path.join(work, f"{name}.err"), "w"))
    with open(os.path.join(work, "pids"), "a") as f:
        f.write(f"{process.pid}\n")
    return process

def end(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    # Ended: no longer one for the shell's clean-up to end.
    pids = os.path.join(work, "pids")
    with open(pids) as f:
        left = [line for line in f if line.strip() != str(process.pid)]
    with open(pids, "w") as f:
        f.writelines(left)

class Service:
    """capctl serve with one camera, on a port of its choosing."""
    def __init__(self, video):
        self.folder = os.path.join(work, "served")
        os.makedirs(self.folder, exist_ok=True)
        self.out = os.path.join(work, "serve.out")
        self.process = spawn([capctl, "serve", "--video", video, "--listen", "127.0.0.1:0", "--dir", self.folder,
                              "--max-viewers", str(max(64, viewers))], "serve")
        self.port = self.wait(lambda e: e["event"] == "service-started")["port"]

    def events(self):
        with open(self.out) as f:
            return [json.loads(line) for line in f if line.startswith("{")]

    def wait(self, condition, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for event in self.events():
                if condition(event):
                    return event
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise SystemExit(f"bench view: the service did not answer in time: {open(self.out).read()[-500:]}"
                         f"{open(os.path.join(work, 'serve.err')).read()[-500:]}")

    def post(self, path, body):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read())

    def record(self, name):
        """A recording of `seconds`, from the POST to its finished event."""
        created = self.post("/recordings", {"file": name, "maxDuration": seconds})
        finished = self.wait(lambda e: e["event"] == "finished" and e.get("recording") == created["id"], timeout=seconds + 60)
        if os.path.exists(os.path.join(self.folder, name)):
            os.remove(os.path.join(self.folder, name))
        return finished

    def stop(self):
        end(self.process)

# The viewers.

class NotServing(Exception):
    pass

async def viewer(port, path, log, server):
    """Reads a multipart MJPEG stream, appending (arrival, JPEG bytes, capture time or None) for each part."""
    deadline = time.time() + 20
    while True:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            break
        except OSError:
            # ffmpeg listens a moment after it starts; one that ended will not.
            if server.poll() is not None or time.time() > deadline:
                raise NotServing()
            await asyncio.sleep(0.05)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " not in head.split(b"\r\n", 1)[0] + b" ":
            raise RuntimeError(f"GET {path}: {head.decode(errors='replace').strip()}")
        chunked = b"transfer-encoding: chunked" in head.lower()
        buffer = bytearray()

        async def more():
            if chunked:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    raise EOFError(f"GET {path}: the stream ended")
                buffer.extend(await reader.readexactly(size + 2))
                del buffer[-2:]
            else:
                data = await reader.read(1 << 16)
                if not data:
                    raise EOFError(f"GET {path}: the stream ended")
                buffer.extend(data)

        while True:
            # A part: ("\r\n" after the last one,) "--boundary", its headers, a blank line, the JPEG.
            head_end = buffer.find(b"\r\n\r\n")
            while head_end < 0:
                await more()
                head_end = buffer.find(b"\r\n\r\n")
            fields = {}
            for line in bytes(buffer[:head_end]).split(b"\r\n"):
                name, colon, value = line.partition(b":")
                if colon:
                    fields[name.strip().lower()] = value.strip()
            length = int(fields[b"content-length"])
            while len(buffer) < head_end + 4 + length:
                await more()
            stamp = fields.get(b"x-timestamp")
            log.append((time.time(), length, float(stamp) if stamp else None))
            del buffer[:head_end + 4 + length]
    finally:
        writer.close()

class Window:
    """What one window measured: the process's CPU (% of a core) and what the viewers received."""
    def __init__(self, used, start, stop, logs, extra):
        self.cpu = 100 * used / (stop - start)
        self.extra = extra
        parts = [[p for p in log if start <= p[0] < stop] for log in logs]
        self.fps = statistics.mean(len(p) / (stop - start) for p in parts) if parts else None
        every = [p for log in parts for p in log]
        self.jpeg = statistics.mean(p[1] for p in every) if every else None
        self.latency = [p[0] - p[2] for p in every if p[2] is not None]

async def watch_window(port, path, count, server, during):
    logs = [[] for _ in range(count)]
    tasks = [asyncio.create_task(viewer(port, path, log, server)) for log in logs]

    def check():
        for task in tasks:
            if task.done():
                task.result()
    try:
        deadline = time.time() + 30
        while not all(logs):
            check()
            if time.time() > deadline:
                raise SystemExit(f"bench view: {sum(map(bool, logs))} of {count} viewers had a picture within 30 s")
            await asyncio.sleep(0.05)
        await asyncio.sleep(warmup)
        check()
        used, start = cpu(server.pid), time.time()
        extra = await asyncio.to_thread(during) if during else await asyncio.sleep(seconds)
        used, stop = cpu(server.pid) - used, time.time()
        check()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Window(used, start, stop, logs, extra)

def watch(port, path, count, server, during=None):
    """`count` viewers of the stream at `path`, and the CPU of `server` (a process) over a window."""
    return asyncio.run(watch_window(port, path, count, server, during))

# ffmpeg serving the view.

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def ffmpeg_args(source, q, output):
    return ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", *(["-re"] if output.startswith("http") else []),
            *sources[source], "-vf", vf, "-r", "15", "-q:v", str(q), *output_format(output)]

def output_format(output):
    if output.startswith("http"):
        return ["-f", "mpjpeg", "-listen", "1", output]
    return ["-frames:v", str(calibration_frames), "-f", "mjpeg", output]

chosen_q = {}
# The pictures of a warm-up and a window, as the viewer gets them.
calibration_frames = int(15 * (warmup + seconds))

def ffmpeg_q(source, target):
    """The -q:v whose JPEGs of `source` are nearest `target` bytes (encoded as fast as it goes)."""
    if fixed_q:
        return int(fixed_q)
    if source not in chosen_q:
        sizes = {}
        for q in range(2, 32):
            out = subprocess.run(ffmpeg_args(source, q, "-"), capture_output=True, check=True).stdout
            sizes[q] = len(out) / calibration_frames
            if sizes[q] < target:
                break
        q = min(sizes, key=lambda q: abs(sizes[q] - target))
        chosen_q[source] = (q, sizes[q], target)
        print(f"ffmpeg -q:v {q} for {source}: {sizes[q] / 1000:.1f} kB a picture, capctl {target / 1000:.1f} kB", file=sys.stderr)
    return chosen_q[source][0]

def ffmpeg_view(source, target):
    q = ffmpeg_q(source, target)
    for attempt in range(5):
        port = free_port()
        process = spawn(ffmpeg_args(source, q, f"http://127.0.0.1:{port}/view.mjpg"), "ffmpeg")
        try:
            return watch(port, "/view.mjpg", 1, process)
        except NotServing:
            # Another program took the port meanwhile (ffmpeg ended): another port.
            pass
        finally:
            end(process)
    raise SystemExit(f"bench view: ffmpeg would not serve: {open(os.path.join(work, 'ffmpeg.err')).read()[-500:]}")

# The cases.

results = {name: [] for name in ("capctl-test", "capctl-many", "record", "record-view", "ffmpeg-test", "capctl-file", "ffmpeg-file")}

def note(name, window):
    results[name].append(window)
    text = f"{name:<12} {window.cpu:6.1f} % of a core"
    if window.fps is not None:
        text += f", {window.fps:5.2f} fps, {window.jpeg / 1000:5.1f} kB a picture"
    if window.latency:
        text += f", latency median {statistics.median(window.latency) * 1000:.1f} ms"
    if window.extra:
        text += f", recording {window.extra['frames']} frames, {window.extra['dropped']} dropped"
    print(f"  {text}", file=sys.stderr)

def capctl_test_cases(run, backwards):
    service = Service(pattern)
    try:
        time.sleep(1)
        cases = [
            ("capctl-test", lambda: watch(service.port, view, 1, service.process)),
            ("capctl-many", lambda: watch(service.port, view, viewers, service.process)),
            ("record", lambda: watch(service.port, view, 0, service.process, lambda: service.record(f"alone-{run}.mp4"))),
            ("record-view", lambda: watch(service.port, view, 1, service.process, lambda: service.record(f"viewed-{run}.mp4"))),
        ]
        for name, case in reversed(cases) if backwards else cases:
            note(name, case())
            time.sleep(1)
    finally:
        service.stop()

def capctl_file_case():
    # The file plays from the service's start: a new service for each run.
    service = Service(f"file:{input_file}")
    try:
        note("capctl-file", watch(service.port, view, 1, service.process))
    finally:
        service.stop()

def ffmpeg_case(source):
    # The size to match: capctl's pictures of the same input (its first run; capctl goes first in run 1).
    capctl = results["capctl-test" if source == "test" else "capctl-file"]
    target = statistics.median(w.jpeg for w in capctl) if capctl else 0
    note(f"ffmpeg-{source}", ffmpeg_view(source, target))

started = time.time()
for run in range(runs):
    print(f"run {run + 1} of {runs}:", file=sys.stderr)
    groups = [lambda: capctl_test_cases(run, run % 2 == 1), lambda: ffmpeg_case("test"), capctl_file_case, lambda: ffmpeg_case("file")]
    if run % 2 == 1:
        groups = [groups[1], groups[0], groups[3], groups[2]]
    for group in groups:
        group()
        time.sleep(1)

# The table.

m = statistics.median

def cpu_of(name):
    return m(w.cpu for w in results[name])

def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

print()
print(f"capctl serve's live view {view} of a 1280x720 30 fps camera, {runs} runs, {seconds:.0f} s windows, "
      f"{time.time() - started:.0f} s in all; CPU in % of one core, medians")
print(f"ffmpeg: -vf {vf} -r 15 -q:v " + ", ".join(f"{chosen_q[s][0]} ({s})" for s in ("test", "file") if s in chosen_q)
      if not fixed_q else f"ffmpeg: -vf {vf} -r 15 -q:v {fixed_q}")
print(f"{'case':<64} {'capctl':>7} {'anchor':>7} {'ratio':>6}  target")
rows = [
    ("1a 1 viewer, test source: capctl test-pattern / ffmpeg testsrc2", "capctl-test", "ffmpeg-test", 0.80),
    ("1b 1 viewer, the same MJPEG file: capctl / ffmpeg", "capctl-file", "ffmpeg-file", 0.80),
    (f"2  {viewers} viewers / 1 viewer (capctl, test-pattern)", "capctl-many", "capctl-test", 1.30),
    ("3  recording + 1 viewer / recording alone (capctl)", "record-view", "record", 1.15),
]
for label, case, anchor, target in rows:
    ratio = cpu_of(case) / cpu_of(anchor)
    print(f"{label:<64} {cpu_of(case):7.1f} {cpu_of(anchor):7.1f} {ratio:6.3f}  <= {target:.2f} {'ok' if ratio <= target else 'MISSED'}")
print()
print(f"{'received (per viewer)':<64} {'fps':>7} {'kB/pic':>7}  latency median, p99 (4)")
for label, case in [("1a capctl, test-pattern", "capctl-test"), ("1a ffmpeg, testsrc2", "ffmpeg-test"),
                    ("1b capctl, file", "capctl-file"), ("1b ffmpeg, file", "ffmpeg-file"),
                    (f"2  capctl, {viewers} viewers", "capctl-many"), ("3  capctl, viewer of a recording service", "record-view")]:
    windows = results[case]
    latency = [l for w in windows for l in w.latency]
    text = f"{m(latency) * 1000:6.1f} ms, {percentile(latency, 99) * 1000:6.1f} ms" if latency else "   (no timestamps)"
    print(f"{label:<64} {m(w.fps for w in windows):7.2f} {m(w.jpeg for w in windows) / 1000:7.1f}  {text}")
recorded = [w.extra for w in results["record"] + results["record-view"]]
print(f"recordings: {m(e['frames'] for e in recorded):.0f} frames (median), {sum(e['dropped'] for e in recorded)} dropped in all")
PY
