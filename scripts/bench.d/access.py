#!/usr/bin/env python3
"""The cost of capctl serve's access checks and of HTTPS (scripts/bench access runs it).

All on 127.0.0.1, the test pattern at 640x480, 30 fps (eight small ones for 4.). Per run:
1. Checks per request: wrk (1 thread, 8 connections, SECONDS) against GET /session of a service
   with no credentials, with --token-file, and with an access file of 100 credentials
   (the request's a view credential of one camera): requests per second of each.
2. TLS handshakes: wrk with 'Connection: close' against GET /session (every request a new
   connection: a TLS 1.3 handshake, ECDSA P-256) over HTTPS, beside the same over plain HTTP
   (a TCP connect each): connections per second.
3. The CPU of a live view over TLS: capctl-serve's CPU (utime + stime, % of one core) over
   SECONDS with one curl reading /stream.mjpg?width=640&fps=30, over plain HTTP, HTTPS with
   HTTP/1.1 and HTTPS with HTTP/2; the added CPU of TLS against plain.
4. The page with eight cameras: headless Chromium signs in with a view credential and waits
   until all eight live views show a picture, over HTTPS with HTTP/2, and with HTTP/2 turned
   off in Chromium (HTTP/1.1 over the same TLS): seconds from the credential to eight pictures.
Prints each run's figures, then the medians and their ratios.

  access.py --capctl PATH [--runs N] [--seconds S]
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(command, **kwargs):
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True, **kwargs).stdout


class Service:
    def __init__(self, capctl, arguments, folder):
        self.out = open(os.path.join(folder, "service.out"), "w+")
        # The files of secrets stay outside the folder the service serves (it refuses them there).
        served = os.path.join(folder, "served")
        os.makedirs(served, exist_ok=True)
        self.process = subprocess.Popen([capctl, "serve", "--listen", "127.0.0.1:0", "--dir", served,
                                         "--access-log", "/dev/null", *arguments],
                                        stdout=self.out, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        self.port = None
        while time.monotonic() < deadline and self.port is None:
            self.out.seek(0)
            for line in self.out:
                if '"service-started"' in line:
                    self.port = json.loads(line)["port"]
            time.sleep(0.05)
        if self.port is None:
            self.stop()
            raise RuntimeError("the service did not start")
        # capctl serve executes capctl-serve in its place: the same PID.
        self.pid = self.process.pid

    def cpu_seconds(self):
        fields = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def wrk(url, seconds, headers=(), connections=8):
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    output = run(command + [url])
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if errors:
        raise RuntimeError(f"wrk: {errors.group(1)} answers were not 2xx: {output}")
    return rate


def certificates(folder):
    run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{folder}/ca.key",
         "-out", f"{folder}/ca.pem", "-days", "1", "-subj", "/CN=bench CA"])
    run(["openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{folder}/key.pem",
         "-out", f"{folder}/csr.pem", "-subj", "/CN=127.0.0.1"])
    with open(f"{folder}/ext", "w") as ext:
        ext.write("subjectAltName=IP:127.0.0.1\n")
    run(["openssl", "x509", "-req", "-in", f"{folder}/csr.pem", "-CA", f"{folder}/ca.pem", "-CAkey", f"{folder}/ca.key",
         "-CAcreateserial", "-out", f"{folder}/cert.pem", "-days", "1", "-extfile", f"{folder}/ext"])
    spki = run(["sh", "-c", f"openssl x509 -pubkey -noout -in {folder}/cert.pem | openssl pkey -pubin -outform der | "
                "openssl dgst -sha256 -binary | base64"]).strip()
    return ["--tls-cert", f"{folder}/cert.pem", "--tls-key", f"{folder}/key.pem"], spki


def credentials(capctl, folder, count):
    path = f"{folder}/access.json"
    secrets = {}
    for index in range(count):
        role = ["view", "record", "control", "admin"][index % 4]
        name = f"user{index}"
        extra = ["--credential-camera", "0"] if index == 0 else []
        secrets[name] = run([capctl, "serve", "--access-file", path, "--add-credential", name, "--role", role, *extra]).strip()
    return path, secrets


def page_seconds(url, spki, secret, http2, folder, cameras):
    """Seconds from the credential to `cameras` live pictures in headless Chromium."""
    sys.path.insert(0, os.path.join(ROOT, "Tests", "Service"))
    from page_check import Browser  # noqa: E402
    extra = [f"--ignore-certificate-errors-spki-list={spki}"] + ([] if http2 else ["--disable-http2"])
    browser = Browser(shutil.which("chromium") or "/usr/bin/chromium", extra=extra)
    try:
        browser.attach()
        browser.send("Page.enable")
        browser.send("Runtime.enable")
        browser.send("Page.navigate", {"url": url})
        browser.wait_for("!document.querySelector('#token-overlay').hidden", 30, "the credential form")
        browser.type_into("#token-input", secret)
        started = time.monotonic()
        browser.click("#token-submit")
        browser.wait_for(f"""(() => {{ const i = Array.from(document.querySelectorAll('.camera img.live'));
            return i.length === {cameras} && i.every(x => x.naturalWidth > 0); }})()""", 60, "every camera's picture")
        seconds = time.monotonic() - started
        protocol = browser.evaluate("performance.getEntriesByType('navigation')[0].nextHopProtocol")
        return seconds, protocol
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capctl", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="capctl-bench-access-")
    tls, spki = certificates(folder)
    access_file, secrets = credentials(args.capctl, folder, 100)
    token_file = f"{folder}/token"
    descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(descriptor, b"bench-token-0123456789abcdef\n")
    os.close(descriptor)
    camera = ["--video", "test-pattern,size=640x480,fps=30", "--no-webrtc"]
    viewer = f"Authorization: Bearer {secrets['user0']}"
    figures = {}

    def note(key, value):
        figures.setdefault(key, []).append(value)
        print(f"  {key}: {value:.3f}", flush=True)

    for index in range(args.runs):
        print(f"run {index + 1}", flush=True)
        # 1. The checks per request.
        for label, extra, headers in (("session, no credentials", [], []),
                                      ("session, token file", ["--token-file", token_file], ["Authorization: Bearer bench-token-0123456789abcdef"]),
                                      ("session, access file of 100", ["--access-file", access_file], [viewer])):
            service = Service(args.capctl, camera + extra, folder)
            try:
                wrk(f"http://127.0.0.1:{service.port}/session", 2, headers)  # warm-up
                note(f"{label} (requests/s)", wrk(f"http://127.0.0.1:{service.port}/session", args.seconds, headers))
            finally:
                service.stop()
        # 2. and 3. HTTPS beside plain HTTP.
        for label, extra, scheme in (("plain", [], "http"), ("tls", tls, "https")):
            service = Service(args.capctl, camera + ["--access-file", access_file] + extra, folder)
            try:
                url = f"{scheme}://127.0.0.1:{service.port}"
                note(f"{label}: new connections/s", wrk(url + "/session", args.seconds, [viewer, "Connection: close"]))
                modes = [("http/1.1", ["--http1.1"])] + ([("h2", ["--http2"])] if scheme == "https" else [])
                for mode, flags in modes:
                    curl = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "--cacert", f"{folder}/ca.pem", *flags, "-H", viewer,
                                             f"{url}/stream.mjpg?width=640&fps=30"])
                    time.sleep(2)
                    before, clock = service.cpu_seconds(), time.monotonic()
                    time.sleep(args.seconds)
                    note(f"{label} {mode}: live view CPU (% of a core)", 100 * (service.cpu_seconds() - before) / (time.monotonic() - clock))
                    curl.terminate()
                    curl.wait()
            finally:
                service.stop()
        # 4. Eight cameras in the page over HTTP/2 and HTTP/1.1 (both over TLS).
        eight = [part for _ in range(8) for part in ("--video", "test-pattern,size=320x240,fps=10")] + ["--no-webrtc"]
        service = Service(args.capctl, eight + ["--access-file", access_file] + tls, folder)
        try:
            for http2 in (True, False):
                seconds, protocol = page_seconds(f"https://127.0.0.1:{service.port}/", spki, secrets["user4"], http2, folder, 8)
                note(f"page, eight cameras over {protocol} (s)", seconds)
        finally:
            service.stop()
    print("medians", flush=True)
    medians = {key: statistics.median(values) for key, values in figures.items()}
    for key, value in medians.items():
        print(f"  {key}: {value:.3f}")
    ratios = [("checks: access file / no credentials", "session, access file of 100 (requests/s)", "session, no credentials (requests/s)"),
              ("checks: token file / no credentials", "session, token file (requests/s)", "session, no credentials (requests/s)"),
              ("new connections: TLS / plain", "tls: new connections/s", "plain: new connections/s"),
              ("live view CPU: TLS HTTP/1.1 / plain", "tls http/1.1: live view CPU (% of a core)", "plain http/1.1: live view CPU (% of a core)"),
              ("live view CPU: TLS HTTP/2 / plain", "tls h2: live view CPU (% of a core)", "plain http/1.1: live view CPU (% of a core)")]
    for label, top, bottom in ratios:
        if top in medians and bottom in medians and medians[bottom]:
            print(f"  {label}: {medians[top] / medians[bottom]:.3f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
