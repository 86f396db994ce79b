#!/usr/bin/env python3
"""Drives capctl serve's page (GET /) in headless Chromium, as a person would.

Chromium (Debian's /usr/bin/chromium unless --chromium says otherwise) runs
headless with --remote-debugging-pipe: this script writes DevTools protocol
commands to its fd 3 and reads its answers and events from its fd 4, each a
JSON message ended by a NUL byte. Python's standard library only.

  page_check.py --url http://127.0.0.1:PORT/ --out DIR [--token TOKEN] [--record-file NAME]

Without --token (a service without one), it checks that:
- the page loads with no console error, no exception and no failed request;
- the live view of camera 0 shows a picture that changes (two samples of the
  <img>, drawn into a canvas about a second apart, differ), and enlarges;
- the test pattern, which has no light and no controls, shows no torch button
  and no controls;
- Record, Pause, Resume, Marker and Stop (real mouse clicks on the page's
  buttons) run a recording whose progress (duration, size, frames, dropped,
  free space) the page shows from /events, and whose file then appears in the
  page's file list, with a download link, and plays in the page's <video>;
- the Photo button shows the photo (an <img> of a blob URL, naturalWidth > 0);
- with GET /devices/0/controls answered as for a camera with a light (DevTools
  request interception; the service's own document with device.hasTorch true),
  the torch button appears and its click POSTs {"on": true} to
  /devices/0/torch, which reaches the service (the test pattern has no light:
  it answers 400 "no torch", which the page shows); a 200 answer turns the
  button on;
- on a phone's screen (390 px wide) the page has no horizontal scrolling.
With --token (a service with --token-file): the page asks for the token once,
in its own form; keeps it in localStorage; then the API, the live view
(a view link in its URL, never the token), the events and download links work; a reload asks
no more; a stored token the service refuses is asked for again.

Screenshots go to DIR (page.png, page-phone.png; page-token.png with --token).
Each check prints PASS or FAIL with what failed; the last lines are
`RESULT {json}` (what the Swift test checks on the service's side) and
`page: N passed, N failed`. Exit status 0 when every check passed, 1 when one
failed, 2 when the browser could not be driven.
"""

import argparse
import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

passed = 0
failed = 0
started = time.monotonic()


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL {what}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def note(text):
    print(f"NOTE [{time.monotonic() - started:5.1f}s] {text}", flush=True)


class BrowserError(Exception):
    """The browser could not be driven (not a failed check)."""


class ScriptError(BrowserError):
    """An expression threw in the page, or the page it ran in went away (a navigation)."""


class TimedOut(Exception):
    pass


class Browser:
    """Headless Chromium over --remote-debugging-pipe, attached to its one page (flat session)."""

    def __init__(self, binary, width=1280, height=900, extra=()):
        self.profile = tempfile.mkdtemp(prefix="capctl-page-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        to_read, self.to_write = os.pipe()      # our commands: Chromium reads them on its fd 3
        self.from_read, from_write = os.pipe()  # its answers and events: it writes them on its fd 4
        # Copies above the low numbers, so that moving them onto 3 and 4 in the child overwrites nothing of ours.
        child_read = fcntl.fcntl(to_read, fcntl.F_DUPFD_CLOEXEC, 20)
        child_write = fcntl.fcntl(from_write, fcntl.F_DUPFD_CLOEXEC, 20)

        def onto_3_and_4():
            os.dup2(child_read, 3)   # dup2 leaves the copies open across exec
            os.dup2(child_write, 4)

        arguments = [binary, "--headless=new", "--no-sandbox", "--disable-gpu", f"--user-data-dir={self.profile}",
                     "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                     "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
                     "--mute-audio", "--password-store=basic", "--use-mock-keychain", "--remote-debugging-pipe",
                     f"--window-size={width},{height}", *extra, "about:blank"]
        self.log = open(self.log_path, "wb")
        # close_fds=False: Python's own descriptors are close-on-exec; 3 and 4 are the ones to pass.
        self.process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                        preexec_fn=onto_3_and_4, close_fds=False)
        for fd in (to_read, from_write, child_read, child_write):
            os.close(fd)
        self.messages = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        self.answers = {}
        self.session = None
        self.listeners = []
        self.phase = "start"

    def _read(self):
        pending = b""
        while True:
            try:
                chunk = os.read(self.from_read, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.messages.put(None)
                return
            pending += chunk
            while b"\0" in pending:
                raw, pending = pending.split(b"\0", 1)
                try:
                    self.messages.put(json.loads(raw))
                except ValueError:
                    pass

    def log_tail(self):
        try:
            with open(self.log_path, "rb") as log:
                return log.read()[-1500:].decode(errors="replace")
        except OSError:
            return ""

    def _pump(self, timeout):
        """Takes one message (waiting up to timeout): an answer is kept, an event goes to the listeners."""
        try:
            message = self.messages.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return
        if message is None:
            raise BrowserError(f"Chromium closed its pipe (exit status {self.process.poll()}): {self.log_tail()}")
        if "id" in message:
            self.answers[message["id"]] = message
        else:
            for listener in list(self.listeners):
                listener(message)

    def post(self, method, params=None, browser_level=False):
        """Sends a command without waiting for its answer; returns its id."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not browser_level:
            message["sessionId"] = self.session
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self.to_write, data)
            data = data[written:]
        return self.next_id

    def send(self, method, params=None, timeout=30, browser_level=False):
        """A command and its result; raises BrowserError with the protocol's message."""
        ident = self.post(method, params, browser_level)
        deadline = time.monotonic() + timeout
        while ident not in self.answers:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BrowserError(f"{method}: no answer within {timeout} s")
            self._pump(min(remaining, 0.5))
        answer = self.answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message')} {answer['error'].get('data', '')}".strip())
        return answer.get("result", {})

    def idle(self, seconds):
        """Lets events come in for a while."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._pump(min(0.1, deadline - time.monotonic()))

    def attach(self):
        """Attaches to the page Chromium opened (about:blank), in flat mode."""
        deadline = time.monotonic() + 30
        while True:
            targets = self.send("Target.getTargets", browser_level=True)["targetInfos"]
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                break
            if time.monotonic() > deadline:
                raise BrowserError("Chromium opened no page")
            self.idle(0.2)
        self.session = self.send("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True},
                                 browser_level=True)["sessionId"]

    def evaluate(self, expression, timeout=30):
        """The value of a JavaScript expression in the page (promises awaited)."""
        try:
            result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                               timeout=timeout)
        except BrowserError as error:
            if "context" in str(error).lower():  # "Execution context was destroyed", "Cannot find context"
                raise ScriptError(f"evaluating {expression[:80]!r}: {error}")
            raise
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise ScriptError(f"evaluating {expression[:80]!r}: {text}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression, timeout=30, what=None):
        """Polls an expression until it is truthy; returns its value or raises TimedOut saying what it last was."""
        deadline = time.monotonic() + timeout
        value = None
        while True:
            try:
                value = self.evaluate(expression)
            except ScriptError as error:
                # While a page is (re)loading, what the expression reads may not be there yet.
                value = f"(threw: {error})"
                if time.monotonic() > deadline:
                    raise TimedOut(f"{what or expression}: not within {timeout} s (last: {value[:300]})")
                self.idle(0.15)
                continue
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimedOut(f"{what or expression}: not within {timeout} s (last: {json.dumps(value)[:300]})")
            self.idle(0.15)

    def click(self, selector, timeout=15):
        """A real mouse click (press and release) at the middle of the element, once it is visible and enabled."""
        expression = f"""(() => {{
            const element = document.querySelector({json.dumps(selector)});
            if (!element || element.disabled || element.closest('[hidden]')) return null;
            element.scrollIntoView({{block: 'center', inline: 'center'}});
            const box = element.getBoundingClientRect();
            if (box.width === 0 || box.height === 0) return null;
            const x = box.left + box.width / 2, y = box.top + box.height / 2;
            const top = document.elementFromPoint(x, y);
            if (!top || !(top === element || element.contains(top))) return null;
            return {{x, y}};
        }})()"""
        point = self.wait_for(expression, timeout, f"a visible, enabled {selector} to click")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": point["x"], "y": point["y"], "button": "left",
                                                   "clickCount": 1})

    def type_into(self, selector, text):
        """Focuses a field, empties it and types text as keyboard input."""
        self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.focus(); e.select(); }})()")
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path):
        """The whole page, as it lays out, to a PNG file."""
        self.evaluate("window.scrollTo(0, 0)")
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics.get("contentSize")
        # The layout viewport's width when it is wider than the content (a scrollbar's width is left out of the content's).
        width = max(size["width"], self.evaluate("innerWidth"))
        clip = {"x": 0, "y": 0, "width": width, "height": min(size["height"], 8000), "scale": 1}
        data = self.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))

    def close(self):
        try:
            self.post("Browser.close", browser_level=True)
            self.process.wait(timeout=10)
        except Exception:
            pass
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for fd in (self.to_write, self.from_read):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Problems:
    """Console errors, exceptions and failed loads the page reports, each with the phase it came in."""

    def __init__(self, browser):
        self.browser = browser
        self.items = []
        browser.listeners.append(self.listen)

    def listen(self, message):
        method, params = message.get("method"), message.get("params", {})
        phase = self.browser.phase
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.items.append({"phase": phase, "kind": "console." + params["type"], "text": text, "url": ""})
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.items.append({"phase": phase, "kind": "exception", "text": text, "url": details.get("url", "")})
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.items.append({"phase": phase, "kind": "log." + entry.get("source", ""), "text": entry.get("text", ""),
                               "url": entry.get("url", "")})

    def during(self, *phases, allow=lambda item: False):
        return [item for item in self.items if item["phase"] in phases and not allow(item)]

    @staticmethod
    def describe(items):
        return "; ".join(f"[{i['phase']}] {i['kind']}: {i['text'][:200]} {i['url']}".strip() for i in items[:8])


# What the page shows, read in the page.
CAMERA0 = '.camera[data-camera="0"]'
LIVE0 = CAMERA0 + " img.live"
# The picture camera 0 shows: the MJPEG <img>, or the WebRTC <video> when that is shown.
SHOWN0 = CAMERA0 + " .live:not([hidden])"

SAMPLE_PICTURE = """(() => {
    const img = document.querySelector(%s);
    const width = img && (img.naturalWidth || img.videoWidth), height = img && (img.naturalHeight || img.videoHeight);
    if (!width) return null;
    const canvas = document.createElement('canvas');
    canvas.width = 64; canvas.height = 48;
    const context = canvas.getContext('2d', {willReadFrequently: true});
    context.drawImage(img, 0, 0, 64, 48);
    const data = context.getImageData(0, 0, 64, 48).data;
    const luma = [];
    for (let i = 0; i < data.length; i += 4) luma.push((data[i] * 299 + data[i + 1] * 587 + data[i + 2] * 114) / 1000 | 0);
    return {luma, width, height};
})()""" % json.dumps(SHOWN0)

READY = "window.capctl && window.capctl.ready === true"


def recording_text(browser, recording, selector):
    return browser.evaluate(f"""(() => {{
        const e = document.querySelector('.recording[data-recording={json.dumps(recording)}] {selector}');
        return e ? e.textContent : null; }})()""")


def picture_changes(browser):
    """Two samples of camera 0's live view, about a second apart."""
    try:
        browser.wait_for(f"(() => {{ const i = document.querySelector({json.dumps(SHOWN0)}); return i && (i.naturalWidth || i.videoWidth) > 0; }})()",
                         30, "camera 0's live view to show a picture")
    except TimedOut as error:
        src = browser.evaluate(f"(document.querySelector({json.dumps(LIVE0)}) || {{}}).src || null")
        check(False, "the live view of camera 0 shows a picture", f"{error}; its src is {src}")
        check(False, "the live view's picture changes", "no picture to compare")
        return
    first = browser.evaluate(SAMPLE_PICTURE)
    check(first is not None and first["width"] > 0, "the live view of camera 0 shows a picture",
          json.dumps(first and {k: first[k] for k in ("width", "height")}))
    spread = max(first["luma"]) - min(first["luma"]) if first else 0
    browser.idle(1.2)
    second = browser.evaluate(SAMPLE_PICTURE)
    differing = sum(1 for a, b in zip(first["luma"], second["luma"]) if abs(a - b) > 8) if first and second else 0
    detail = f"{differing} of 3072 samples differ by more than 8; spread of the first {spread}"
    if differing == 0:
        # Whether the screen shows a change where the canvas sees none.
        box = browser.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(SHOWN0)}).getBoundingClientRect(); "
                               "return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height, scale: 1}; })()")
        shots = [browser.send("Page.captureScreenshot", {"format": "png", "clip": box})["data"]]
        browser.idle(1.0)
        shots.append(browser.send("Page.captureScreenshot", {"format": "png", "clip": box})["data"])
        detail += f"; screenshots of it a second apart are {'different' if shots[0] != shots[1] else 'the same'}"
    check(spread > 40 and differing >= 10, "the live view's picture changes (canvas samples 1.2 s apart differ)", detail)


def run_plain(browser, problems, args):
    result = {}
    out = args.out
    browser.phase = "load"
    browser.send("Page.navigate", {"url": args.url})
    try:
        browser.wait_for(READY, 30, "the page to load the session, devices, recordings and files")
        check(True, "the page loads: session, devices, cameras, recordings and files")
    except TimedOut as error:
        check(False, "the page loads", f"{error}; it shows: {browser.evaluate('document.body.innerText.slice(0, 400)')}")
        return result
    try:
        browser.wait_for("document.querySelector('#events-state').dataset.state === 'open'", 15, "the event stream to open")
        check(True, "the page opens the event stream (/events)")
    except TimedOut as error:
        check(False, "the page opens the event stream (/events)", str(error))

    browser.phase = "view"
    picture_changes(browser)
    badge = browser.evaluate(f"document.querySelector('{CAMERA0} .transport').textContent")
    check(badge == "MJPEG", "without WebRTC at the service, the view is MJPEG and says so", repr(badge))
    # The load is over once the live view has had its chance: nothing may have gone wrong meanwhile.
    browser.idle(0.5)
    load_problems = problems.during("load", "view")
    check(not load_problems, "the page loads with no console error, exception or failed request", Problems.describe(load_problems))

    listed = browser.evaluate("Array.from(document.querySelectorAll('#devices tbody tr')).map(r => r.textContent)")
    check(listed and any("test-pattern" in row for row in listed) and any("test-tone" in row for row in listed),
          "the devices table lists test-pattern and test-tone with their formats", json.dumps(listed))
    meta = browser.evaluate(f"document.querySelector('{CAMERA0} .meta').textContent")
    check(meta and "640×480" in meta and "30 fps" in meta, "camera 0 shows its format (640×480, 30 fps)", repr(meta))

    # Enlarged: the view asks for the larger picture; clicked again, the smaller one.
    src_small = browser.evaluate(f"document.querySelector({json.dumps(LIVE0)}).getAttribute('src')") or ""
    browser.click(CAMERA0 + " .view")
    try:
        enlarged = browser.wait_for(f"""(() => {{ const c = document.querySelector({json.dumps(CAMERA0)});
            const src = c.querySelector('img.live').getAttribute('src') || '';
            return c.classList.contains('enlarged') && src.includes('fps=30') ? src : null; }})()""", 10, "the enlarged view")
        check("width=640" in src_small and "fps=15" in src_small and "camera=0" in src_small and "width=640" in enlarged,
              "the view asks /stream.mjpg for 640 px at 15 fps, enlarged (clicked) for the camera's full 640 px at 30 fps",
              f"{src_small} then {enlarged}")
    except TimedOut as error:
        check(False, "the view enlarges when clicked", str(error))
    browser.click(CAMERA0 + " .view")
    browser.wait_for(f"!document.querySelector({json.dumps(CAMERA0)}).classList.contains('enlarged')", 10, "the view to shrink")

    torch = browser.evaluate(f"(() => {{ const t = document.querySelector('{CAMERA0} .torch'); return t ? {{hidden: t.hidden}} : null; }})()")
    check(torch is not None and torch["hidden"], "the test pattern (no light) shows no torch button", json.dumps(torch))
    controls = browser.evaluate(f"document.querySelector('{CAMERA0} .camera-controls').hidden")
    check(controls is True, "the test pattern (no controls) shows no exposure, focus, white balance or zoom controls", repr(controls))

    # ---- Recording, through the page's buttons.
    browser.phase = "record"
    browser.type_into("#record-form input[name=file]", args.record_file)
    browser.click("#record-start")
    try:
        recording = browser.wait_for("(document.querySelector('.recording[data-recording]') || {dataset: {}}).dataset.recording || null",
                                     20, "the recording's card")
    except TimedOut as error:
        check(False, "Record starts a recording the page shows", f"{error}; message: {browser.evaluate('capctl.lastMessage')}")
        return result
    result["recording"] = recording
    card = f'.recording[data-recording="{recording}"]'
    try:
        stats = browser.wait_for(f"""(() => {{
            const card = document.querySelector({json.dumps(card)});
            const value = name => card.querySelector(`[data-stat="${{name}}"] b`).textContent;
            const stats = {{duration: value('duration'), bytes: value('bytes'), frames: value('frames'),
                           dropped: value('dropped'), freeSpace: value('freeSpace'), state: card.dataset.state}};
            return stats.state === 'running' && stats.duration >= '00:00:01.5' && stats.frames !== '–' ? stats : null;
        }})()""", 20, "the recording's progress from /events")
        check(stats["bytes"] != "–" and int(stats["frames"]) > 0 and stats["dropped"] == "0" and stats["freeSpace"].endswith("B"),
              "the recording's card shows its progress from /events: duration, size, frames, dropped, free space",
              json.dumps(stats))
    except TimedOut as error:
        check(False, "the recording's card shows its progress from /events", str(error))

    browser.click(card + " button[data-action=pause]")
    try:
        browser.wait_for(f"document.querySelector({json.dumps(card)}).dataset.state === 'paused'", 10, "the paused state")
        browser.click(card + " button[data-action=resume]")
        browser.wait_for(f"document.querySelector({json.dumps(card)}).dataset.state === 'running'", 10, "the running state again")
        check(True, "Pause and Resume pause and resume the recording")
    except TimedOut as error:
        check(False, "Pause and Resume pause and resume the recording", str(error))

    browser.type_into(card + " input[name=title]", args.marker)
    browser.click(card + " button[data-action=marker]")
    try:
        line = browser.wait_for(f"""Array.from(document.querySelectorAll('{card} .marker-line')).map(l => l.textContent)
            .find(t => t.includes({json.dumps(args.marker)})) || null""", 10, "the marker in the card")
        check(True, f"Marker puts a marker on the recording, which the card lists ({line.strip()})")
        result["marker"] = args.marker
    except TimedOut as error:
        check(False, "Marker puts a marker on the recording", f"{error}; message: {browser.evaluate('capctl.lastMessage')}")

    # ---- Photo, while the recording runs.
    browser.click(CAMERA0 + " button.photo")
    try:
        photo = browser.wait_for("""(() => { const img = document.querySelector('#photo img.photo');
            return img && img.complete && img.naturalWidth > 0 ? {src: img.src, width: img.naturalWidth, height: img.naturalHeight} : null; })()""",
                                 20, "the photo in the page")
        check(photo["src"].startswith("blob:") and photo["width"] == 640 and photo["height"] == 480,
              "Photo shows the camera's photo (a blob URL image, 640×480)", json.dumps(photo))
        result["photo"] = {"width": photo["width"], "height": photo["height"]}
    except TimedOut as error:
        check(False, "Photo shows the camera's photo", f"{error}; message: {browser.evaluate('capctl.lastMessage')}")

    browser.idle(0.5)
    browser.click(card + " button[data-action=stop]")
    try:
        state = browser.wait_for(f"""(() => {{ const c = document.querySelector({json.dumps(card)});
            return c.dataset.state === 'finished' ? c.querySelector('.state').textContent : null; }})()""", 20, "the finished state")
        check("stopped" in state, "Stop finishes the recording (the card says finished, stopped)", state)
    except TimedOut as error:
        check(False, "Stop finishes the recording", str(error))

    # ---- The file: listed, downloadable, playable.
    row = f'#files tr[data-file="{args.record_file}"]'
    try:
        browser.wait_for(f"(() => {{ const r = document.querySelector({json.dumps(row)}); return r && r.dataset.recording === 'false'; }})()",
                         15, f"{args.record_file} in the file list, finished")
        check(True, f"the file list shows {args.record_file}, finished")
    except TimedOut as error:
        listed = browser.evaluate("Array.from(document.querySelectorAll('#files tbody tr')).map(r => r.dataset.file)")
        check(False, f"the file list shows {args.record_file}", f"{error}; listed: {listed}")
        return result
    download = browser.evaluate(f"""(async () => {{
        const link = document.querySelector('{row} a.download');
        const response = await fetch(link.href);
        const bytes = (await response.arrayBuffer()).byteLength;
        return {{href: link.getAttribute('href'), download: link.getAttribute('download'), status: response.status,
                type: response.headers.get('content-type'), length: bytes}};
    }})()""")
    check(download["href"] == "/files/" + args.record_file and download["status"] == 200 and download["length"] > 1000
          and download["type"] == "video/mp4", "its download link is /files/NAME and answers the file (video/mp4)", json.dumps(download))
    browser.click(row + " button.play")
    try:
        video = browser.wait_for("""(() => { const v = document.querySelector('#player video');
            if (v && v.error) return {error: v.error.code + ' ' + v.error.message};
            return v && v.readyState >= 2 && v.duration > 0 ? {duration: v.duration, width: v.videoWidth, height: v.videoHeight} : null; })()""",
                                 30, "the file to load in the page's <video>")
        check("error" not in video and video["duration"] > 1 and video["width"] == 640,
              "the file plays in the page's <video> (loadeddata, duration > 1 s, 640 px wide)", json.dumps(video))
        result["videoDuration"] = video.get("duration")
    except TimedOut as error:
        check(False, "the file plays in the page's <video>", str(error))

    browser.phase = "screenshots"
    browser.idle(0.3)
    screenshot = os.path.join(out, "page.png")
    browser.screenshot(screenshot)
    print(f"SCREENSHOT {screenshot}", flush=True)
    # A phone: nothing wider than the screen.
    browser.send("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    browser.idle(0.8)
    widths = browser.evaluate("({scroll: document.documentElement.scrollWidth, inner: innerWidth})")
    check(widths["scroll"] <= widths["inner"], "on a phone's screen (390 px) the page needs no horizontal scrolling", json.dumps(widths))
    phone = os.path.join(out, "page-phone.png")
    browser.screenshot(phone)
    print(f"SCREENSHOT {phone}", flush=True)
    browser.send("Emulation.clearDeviceMetricsOverride")

    everything = problems.during("record", "screenshots")
    check(not everything, "no console error, exception or failed request while recording", Problems.describe(everything))

    run_torch(browser, problems, args, result)
    return result


def run_torch(browser, problems, args, result):
    """The torch button, on a camera the page is told has a light."""
    browser.phase = "torch"
    posted = []
    fake_answer = {"on": False}
    origin = args.url.rstrip("/")

    def intercept(message):
        if message.get("method") != "Fetch.requestPaused":
            return
        params = message["params"]
        request = params["request"]
        url = request["url"]
        if "/devices/0/controls" in url and request["method"] == "GET":
            # The service's own document, as a camera with a light would have it.
            with urllib.request.urlopen(origin + "/devices/0/controls", timeout=10) as response:
                document = json.loads(response.read())
            document["device"]["hasTorch"] = True
            body = base64.b64encode(json.dumps(document).encode()).decode()
            browser.post("Fetch.fulfillRequest", {"requestId": params["requestId"], "responseCode": 200, "body": body,
                                                  "responseHeaders": [{"name": "Content-Type", "value": "application/json"}]})
        elif "/devices/0/torch" in url and request["method"] == "POST":
            posted.append({"body": request.get("postData"), "origin": request["headers"].get("Origin")})
            if fake_answer["on"]:
                status = {"source": "white:torch", "sourceKind": "led", "hasTorch": True, "hasFlash": False, "active": True,
                          "level": 1, "available": True, "maxAvailableLevel": 1, "faults": []}
                browser.post("Fetch.fulfillRequest", {"requestId": params["requestId"], "responseCode": 200,
                                                      "body": base64.b64encode(json.dumps(status).encode()).decode(),
                                                      "responseHeaders": [{"name": "Content-Type", "value": "application/json"}]})
            else:
                browser.post("Fetch.continueRequest", {"requestId": params["requestId"]})
        else:
            browser.post("Fetch.continueRequest", {"requestId": params["requestId"]})

    browser.listeners.append(intercept)
    browser.send("Fetch.enable", {"patterns": [{"urlPattern": "*/devices/0/controls*", "requestStage": "Request"},
                                               {"urlPattern": "*/devices/0/torch*", "requestStage": "Request"}]})
    browser.send("Page.reload", {"ignoreCache": True})
    try:
        browser.wait_for(READY, 30, "the page to load again")
        browser.wait_for(f"!document.querySelector('{CAMERA0} .torch').hidden", 10, "the torch button")
        check(True, "a camera with a light (device.hasTorch) shows the torch button")
    except TimedOut as error:
        check(False, "a camera with a light shows the torch button", str(error))
        return
    browser.click(CAMERA0 + " .torch")
    try:
        message = browser.wait_for("""(() => { const m = document.querySelector('#message');
            return !m.hidden && m.dataset.kind === 'error' && m.textContent.includes('torch') ? m.textContent : null; })()""",
                                   15, "the service's answer to the torch request")
        body = json.loads(posted[0]["body"]) if posted and posted[0]["body"] else None
        check(body == {"on": True} and "no torch" in message,
              "Torch POSTs {\"on\": true} to /devices/0/torch, which reaches the service: its refusal for the test pattern "
              "(no light) shows in the page", f"posted {posted}; the page says {message!r}")
    except TimedOut as error:
        check(False, "Torch POSTs to /devices/0/torch and the page shows the answer", f"{error}; posted {posted}")
    # A light that turns on (the answer a camera with one gives): the button shows it on.
    fake_answer["on"] = True
    browser.click(CAMERA0 + " .torch")
    try:
        browser.wait_for(f"document.querySelector('{CAMERA0} .torch').getAttribute('aria-pressed') === 'true'", 10, "the torch on")
        check(len(posted) == 2 and json.loads(posted[1]["body"]) == {"on": True},
              "a 200 answer (torch active) shows the torch button on", json.dumps(posted))
    except TimedOut as error:
        check(False, "a 200 answer shows the torch button on", str(error))
    browser.send("Fetch.disable")
    browser.listeners.remove(intercept)
    browser.idle(0.3)
    # The refused torch request is a failed request the browser reports; nothing else may be.
    expected = lambda item: "/devices/0/torch" in item["url"] and "400" in item["text"]
    unexpected = problems.during("torch", allow=expected)
    check(not unexpected, "no console error or exception with the torch, beyond the service's 400 for a camera without light",
          Problems.describe(unexpected))
    result["torchPosts"] = len(posted)


EVERY_CAMERA_ON_WEBRTC = """(() => {
    const cards = Array.from(document.querySelectorAll('.camera'));
    return cards.length > 0 && cards.every(c => c.dataset.transport === 'webrtc') ? cards.length : null; })()"""

# Each camera's view: its size, and the frames its connection decoded (a browser pauses a
# muted video out of sight, so its currentTime says nothing of the frames coming).
PICTURES = """(async () => Promise.all(Array.from(document.querySelectorAll('.camera')).map(async c => {
    const v = c.querySelector('video.rtc'), camera = capctl.cameras.get(c.dataset.camera);
    let frames = 0;
    if (camera.pc) (await camera.pc.getStats()).forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'video') frames = s.framesDecoded; });
    return {camera: c.dataset.camera, width: v.videoWidth, frames, hidden: v.hidden,
            badge: c.querySelector('.transport').textContent, img: c.querySelector('img.live').getAttribute('src')}; })))()"""


def run_webrtc(browser, problems, args):
    """Every camera live over WebRTC at once, with sound on request; MJPEG when WebRTC cannot show."""
    result = {}
    browser.phase = "load"
    browser.send("Page.navigate", {"url": args.url})
    try:
        browser.wait_for(READY, 30, "the page to load")
        check(True, "the page loads")
    except TimedOut as error:
        check(False, "the page loads", str(error))
        return result
    browser.phase = "view"
    try:
        count = browser.wait_for(EVERY_CAMERA_ON_WEBRTC, 60, "every camera to be live over WebRTC")
        check(count == args.cameras, f"every camera ({args.cameras}) is live over WebRTC", f"{count}")
    except TimedOut as error:
        check(False, f"every camera ({args.cameras}) is live over WebRTC",
              f"{error}: {browser.evaluate(PICTURES)}")
        return result
    first = browser.evaluate(PICTURES)
    browser.idle(1.5)
    second = browser.evaluate(PICTURES)
    moving = [a["camera"] for a, b in zip(first, second) if a["width"] > 0 and b["frames"] > a["frames"] and not a["hidden"]]
    check(len(moving) == args.cameras and all(p["badge"] == "WebRTC" and not p["img"] for p in second),
          f"{args.cameras} live pictures at once, each marked WebRTC, no MJPEG stream open", json.dumps(second))
    result["pictures"] = len(moving)
    picture_changes(browser)
    browser.screenshot(os.path.join(args.out, "page-webrtc.png"))
    # Sound: muted until asked; then the microphone's audio plays.
    sound = CAMERA0 + " button.sound"
    visible = browser.evaluate(f"(() => {{ const b = document.querySelector({json.dumps(sound)}); return b && !b.hidden; }})()")
    muted = browser.evaluate(f"document.querySelector('{CAMERA0} video.rtc').muted")
    check(visible and muted, "the view starts muted, with a Sound button", f"visible {visible}, muted {muted}")
    browser.click(sound)
    state = browser.evaluate(f"""(async () => {{
        const c = capctl.cameras.get('0'); let samples = 0;
        (await c.pc.getStats()).forEach(s => {{ if (s.type === 'inbound-rtp' && s.kind === 'audio') samples = s.totalSamplesReceived; }});
        return {{muted: c.video.muted, pressed: document.querySelector({json.dumps(sound)}).getAttribute('aria-pressed'), samples}}; }})()""")
    check(state["muted"] is False and state["pressed"] == "true" and state["samples"] > 0,
          "clicked, Sound unmutes the view and the microphone's samples arrive", json.dumps(state))
    session = browser.evaluate("""(async () => (await (await fetch('/session')).json()).webrtc.length)()""")
    check(session == args.cameras, "the service lists one WebRTC viewer per camera", f"{session}")
    browser.idle(0.5)
    load_problems = problems.during("load", "view")
    check(not load_problems, "no console error, exception or failed request", Problems.describe(load_problems))

    # WebRTC that cannot show a picture: the view falls back to MJPEG and says so. Loaded
    # again, camera 0's offers are answered with a refusal (DevTools request interception).
    browser.phase = "fallback"
    browser.send("Fetch.enable", {"patterns": [{"urlPattern": "*/devices/0/whep*", "requestStage": "Request"}]})

    def refuse(message):
        if message.get("method") == "Fetch.requestPaused":
            body = base64.b64encode(b'{"error": "WebRTC is refused here by the test"}\n').decode()
            browser.post("Fetch.fulfillRequest", {"requestId": message["params"]["requestId"], "responseCode": 500,
                                                   "responseHeaders": [{"name": "Content-Type", "value": "application/json"}],
                                                   "body": body})
    browser.listeners.append(refuse)
    browser.send("Page.reload")
    try:
        browser.wait_for(READY, 30, "the page to load again")
    except TimedOut as error:
        check(False, "the page loads again", str(error))
        return result
    try:
        browser.wait_for(f"""(() => {{ const c = document.querySelector({json.dumps(CAMERA0)});
            const img = c.querySelector('img.live');
            return c.dataset.transport === 'mjpeg' && !img.hidden && (img.getAttribute('src') || '').includes('/stream.mjpg') &&
                   c.querySelector('.transport').textContent === 'MJPEG'; }})()""", 20, "camera 0 to fall back to MJPEG")
        check(True, "when WebRTC fails, the view falls back to MJPEG and says so")
    except TimedOut as error:
        check(False, "when WebRTC fails, the view falls back to MJPEG and says so", str(error))
    browser.listeners.remove(refuse)
    browser.send("Fetch.disable")
    picture_changes(browser)
    return result


def run_token(browser, problems, args):
    result = {}
    browser.phase = "load"
    browser.send("Page.navigate", {"url": args.url})
    overlay_shown = "!document.querySelector('#token-overlay').hidden"
    try:
        browser.wait_for(overlay_shown, 30, "the token form")
        check(True, "the page asks for the token in its form")
    except TimedOut as error:
        check(False, "the page asks for the token in its form", f"{error}; it shows: {browser.evaluate('document.body.innerText.slice(0, 300)')}")
        return result
    screenshot = os.path.join(args.out, "page-token.png")
    browser.screenshot(screenshot)
    print(f"SCREENSHOT {screenshot}", flush=True)
    check(browser.evaluate("localStorage.getItem('capctl.token')") is None, "no token is kept before one is given")
    browser.type_into("#token-input", args.token)
    browser.click("#token-submit")
    try:
        browser.wait_for(READY, 30, "the page to load with the token")
        check(True, "with the token given, the page loads")
    except TimedOut as error:
        check(False, "with the token given, the page loads", str(error))
        return result
    asked = browser.evaluate("({asked: capctl.tokenAsked, kept: localStorage.getItem('capctl.token'), "
                             "hidden: document.querySelector('#token-overlay').hidden})")
    check(asked == {"asked": 1, "kept": args.token, "hidden": True},
          "it asked once, keeps the token in localStorage and closed the form", json.dumps(asked))
    src = browser.evaluate(f"document.querySelector({json.dumps(LIVE0)}).getAttribute('src')") or ""
    check("link=v1.view." in src and args.token not in src and "access_token" not in src,
          "the live view's URL carries a view link, never the token", src)
    picture_changes(browser)
    try:
        browser.wait_for("document.querySelector('#events-state').dataset.state === 'open'", 15, "the event stream to open")
        check(True, "the event stream opens with access_token")
    except TimedOut as error:
        check(False, "the event stream opens with access_token", str(error))
    # A file made meanwhile by another client: the page hears of it (event stream) and links it with the token.
    request = urllib.request.Request(args.url.rstrip("/") + "/photos", data=json.dumps({"file": "token-shot.jpg"}).encode(),
                                     method="POST", headers={"Authorization": f"Bearer {args.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=20) as response:
        check(response.status == 201, "POST /photos with the token (another client) answers 201", str(response.status))
    try:
        link = browser.wait_for("""(() => { const a = document.querySelector('#files tr[data-file="token-shot.jpg"] a.download');
            return a ? a.getAttribute('href') : null; })()""", 15, "token-shot.jpg in the page's file list (from its photo event)")
        fetched = browser.evaluate(f"fetch({json.dumps(link)}).then(r => r.status)")
        check(link == f"/files/token-shot.jpg?access_token={args.token}" and fetched == 200,
              "the page lists the new file from the event stream; its download link carries access_token and answers 200",
              f"{link} -> {fetched}")
    except TimedOut as error:
        check(False, "the page lists a new file from the event stream", str(error))
    browser.click(CAMERA0 + " button.photo")
    try:
        browser.wait_for("(() => { const i = document.querySelector('#photo img.photo'); return i && i.naturalWidth > 0; })()", 20, "the photo")
        check(True, "Photo works with the token (Authorization: Bearer)")
    except TimedOut as error:
        check(False, "Photo works with the token", f"{error}; message: {browser.evaluate('capctl.lastMessage')}")

    # Reloaded: the kept token is used; no question.
    browser.phase = "reload"
    browser.send("Page.reload", {"ignoreCache": True})
    try:
        browser.wait_for(READY, 30, "the page to load again")
        again = browser.evaluate("({asked: capctl.tokenAsked, hidden: document.querySelector('#token-overlay').hidden})")
        check(again == {"asked": 0, "hidden": True}, "reloaded, the page uses the kept token and asks nothing", json.dumps(again))
    except TimedOut as error:
        check(False, "reloaded, the page loads with the kept token", str(error))
    reload_problems = problems.during("reload")
    check(not reload_problems, "reloaded with the kept token: no console error, exception or failed request",
          Problems.describe(reload_problems))

    # A kept token the service refuses is asked for again, saying so.
    browser.phase = "refused"
    browser.evaluate("localStorage.setItem('capctl.token', 'not-the-token')")
    browser.send("Page.reload", {"ignoreCache": True})
    try:
        browser.wait_for(overlay_shown, 30, "the token form again")
        text = browser.evaluate("document.querySelector('#token-note').textContent")
        kept = browser.evaluate("localStorage.getItem('capctl.token')")
        check("refused" in text and kept is None, "a kept token the service refuses is dropped and asked for again", f"{text!r}, kept {kept!r}")
        browser.type_into("#token-input", args.token)
        browser.click("#token-submit")
        browser.wait_for(READY, 30, "the page to load with the token")
        check(browser.evaluate("localStorage.getItem('capctl.token')") == args.token, "the token given again is kept")
    except TimedOut as error:
        check(False, "a kept token the service refuses is asked for again", str(error))

    # 401 answers are what brings the form: the browser reports them as failed loads. Nothing else may fail.
    unauthorized = lambda item: item["kind"] == "log.network" and "401" in item["text"]
    unexpected = problems.during("load", "reload", "refused", allow=unauthorized)
    check(not unexpected, "no console error or exception with the token beyond the 401 answers that ask for it",
          Problems.describe(unexpected))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the page, http://127.0.0.1:PORT/")
    parser.add_argument("--out", required=True, help="a folder for the screenshots")
    parser.add_argument("--token", help="the service's token (it runs with --token-file)")
    parser.add_argument("--record-file", default="page-check.mp4")
    parser.add_argument("--marker", default="marked from the page")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--webrtc", action="store_true", help="check the live views over WebRTC instead (a service with WebRTC)")
    parser.add_argument("--cameras", type=int, default=1, help="with --webrtc: how many cameras the service has")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if not os.access(args.chromium, os.X_OK):
        print(f"page: no Chromium at {args.chromium} (Debian: apt-get install chromium)", flush=True)
        return 2
    browser = Browser(args.chromium)
    result = {}
    status = 0
    try:
        browser.attach()
        problems = Problems(browser)
        for domain in ("Runtime", "Log", "Page"):
            browser.send(f"{domain}.enable")
        note("Chromium is attached")
        if args.webrtc:
            result = run_webrtc(browser, problems, args)
        else:
            result = run_token(browser, problems, args) if args.token else run_plain(browser, problems, args)
    except (BrowserError, TimedOut) as error:
        print(f"FAIL the browser could not be driven: {error}", flush=True)
        status = 2
    finally:
        browser.close()
    note("done")
    print("RESULT " + json.dumps(result), flush=True)
    print(f"page: {passed} passed, {failed} failed", flush=True)
    return status or (1 if failed else 0)


if __name__ == "__main__":
    sys.exit(main())
