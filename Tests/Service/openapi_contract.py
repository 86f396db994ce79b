#!/usr/bin/env python3
"""Contract test of `capctl serve` against its OpenAPI document, with schemathesis.

Starts the service (test-pattern and test-tone, on 127.0.0.1 with port 0, a
fresh --dir), once without a token, once with a token file (mode 0600) whose
token schemathesis sends as a header, and once for each role (view, record,
control, admin) with an access file holding one credential of that role, made
by `capctl serve --add-credential` (--role-examples examples each: an operation
the role may not call answers 403, which the document allows). Each time schemathesis runs
over every operation the service serves, with generated and malformed input
(--mode all), and checks that no answer is a server error and that each
status, content type, body and header is what the document says. Then:

- the service logged no 5xx answer and still answers GET /session;
- GET /events opens an event stream, and GET /stream.mjpg a multipart stream of
  JPEG pictures (schemathesis cannot read an endless body); a view of a nonsense
  size is a 400;
- nothing was created outside --dir: the folder around it (which is also the
  service's working folder) holds what it held before, / holds what it held,
  and /tmp as the service saw it (a private empty folder mounted over /tmp for
  the service alone, where unshare can do that) is still empty;
- recordings the generated input left running are stopped, then SIGTERM stops
  the service with exit status 0;
- as a role that may not record (view, control), --dir is still empty: every
  refused request changed nothing.

Operations the document describes that this build does not serve yet (the
router answers "no such path" or 405) are listed and left out, never silently.

  Tests/Service/openapi_contract.py [--capctl PATH] [--max-examples N] [--seed N] [--keep]

Exit status 0 when every check passed, 1 when one failed, 2 when it could not
run (no schemathesis: run scripts/setup; no capctl build). The last line is
"contract: N passed, N failed".
"""

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
# Operations whose answer never ends: checked by this script, left out of schemathesis's run.
ENDLESS = ("/events", "/stream.mjpg")
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance"

passed = 0
failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {what}", flush=True)
    else:
        failed += 1
        print(f"FAIL {what}" + (f": {detail}" if detail else ""), flush=True)
    return ok


def request(port, method, path, token=None, body=None, headers=None, timeout=30):
    """(status, headers, body bytes) of one request to the service."""
    all_headers = {"Host": f"127.0.0.1:{port}"}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if body is not None:
        all_headers["Content-Type"] = "application/json"
        body = json.dumps(body).encode()
    all_headers.update(headers or {})
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def listing(folder, skip=()):
    """Every path under folder (relative), folders marked with '/', leaving out `skip` (relative names)."""
    found = set()
    for base, folders, files in os.walk(folder):
        relative = os.path.relpath(base, folder)
        folders[:] = [f for f in folders if os.path.normpath(os.path.join(relative, f)) not in skip]
        for name in folders:
            found.add(os.path.normpath(os.path.join(relative, name)) + "/")
        for name in files:
            found.add(os.path.normpath(os.path.join(relative, name)))
    return found


def top_level(folder):
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def private_tmp_works():
    """Whether unshare can give a process a /tmp of its own (needs root, or user namespaces)."""
    if not shutil.which("unshare"):
        return False
    view = tempfile.mkdtemp(prefix="capctl-contract-probe-", dir="/var/tmp")
    try:
        result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                 'mount --bind "$0" /tmp && touch /tmp/probe', view],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=20)
        return result.returncode == 0 and os.path.exists(os.path.join(view, "probe")) and not os.path.exists("/tmp/probe")
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        shutil.rmtree(view, ignore_errors=True)


class Service:
    """capctl serve, started in `cwd`, its stdout lines kept, its stderr (the access log) in a file."""

    def __init__(self, capctl, served, cwd, artifacts, token_file, tmp_view, access_file=None):
        command = [capctl, "serve", "--video", "test-pattern", "--audio", "test-tone", "--listen", "127.0.0.1:0",
                   "--dir", served, "--max-recordings", "2"]
        if token_file:
            command += ["--token-file", token_file]
        if access_file:
            command += ["--access-file", access_file]
        if tmp_view:
            command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       'mount --bind "$0" /tmp && exec "$@"', tmp_view] + command
        self.stderr_path = os.path.join(artifacts, "service-stderr.log")
        self.stderr = open(self.stderr_path, "wb")
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self.stderr)
        self.lines = []
        self.started = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.lines.append(line)
            if '"service-started"' in line:
                self.started.set()

    def port(self, timeout=60):
        if not self.started.wait(timeout):
            return None
        for line in self.lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "service-started":
                return event.get("port")
        return None

    def stop(self, timeout=60):
        """SIGTERM, then its exit status (None if it did not stop in time: it is then killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            status = None
        self.reader.join(5)
        self.stderr.close()
        return status

    def server_errors(self):
        """Access-log lines whose status is 5xx: time client "METHOD PATH" STATUS BYTES TIMEms."""
        errors = []
        with open(self.stderr_path, "rb") as log:
            for raw in log:
                line = raw.decode(errors="replace").rstrip("\n")
                quoted = line.rfind('" ')
                fields = line[quoted + 2:].split() if quoted >= 0 else []
                if fields and fields[0].isdigit() and fields[0].startswith("5"):
                    errors.append(line)
        return errors


def served_operations(port, token, document):
    """(served, not served) operations of the document, as (METHOD, path), probed with the documents' examples."""
    served, missing = [], []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "head", "post", "put", "patch", "delete"):
                continue
            if path in ENDLESS:
                served.append((method.upper(), path))  # an endless stream: probed by its own check
                continue
            concrete = path
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    concrete = concrete.replace("{" + parameter["name"] + "}", "capctl-contract-probe")
            # An empty JSON object: no recording, photo or setting can start from it
            # (POST /recordings without file is a 400), but the router shows whether it knows the route.
            body = {} if method in ("post", "patch", "put") and concrete != "/photos" else None
            if concrete == "/photos":
                body = {"format": "nonexistent-format"}
            status, _, answer = request(port, method.upper(), concrete, token, body=body)
            text = answer.decode(errors="replace")
            unknown = (status == 404 and "no such path" in text) or status == 405
            (missing if unknown else served).append((method.upper(), path))
    return served, missing


def run_once(args, st, with_token, tmp_view_ok, role=None):
    label = f"as role {role}" if role else "with a token" if with_token else "without a token"
    print(f"\n== capctl serve {label}", flush=True)
    parent = tempfile.mkdtemp(prefix="capctl-contract-", dir="/var/tmp")
    artifacts = tempfile.mkdtemp(prefix="capctl-contract-run-", dir="/var/tmp")
    served = os.path.join(parent, "served")
    cwd = os.path.join(parent, "cwd")
    os.mkdir(served)
    os.mkdir(cwd)
    tmp_view = os.path.join(artifacts, "tmp-view") if tmp_view_ok else None
    if tmp_view:
        os.mkdir(tmp_view)
    token = secrets.token_urlsafe(24) if with_token and not role else None
    token_file = None
    access_file = None
    if role:
        # One credential of the role, made as a person would; its secret is what schemathesis sends.
        access_file = os.path.join(artifacts, "access.json")
        made = subprocess.run([args.capctl, "serve", "--access-file", access_file, "--add-credential", f"contract-{role}", "--role", role],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not check(made.returncode == 0 and made.stdout.count("\n") == 1, f"{label}: --add-credential makes a credential",
                     made.stderr):
            return
        token = made.stdout.strip()
    if token and not role:
        token_file = os.path.join(artifacts, "token")
        descriptor = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, (token + "\n").encode())
        os.close(descriptor)

    before_parent = listing(parent, skip={"served"})
    before_root = top_level("/")
    before_tmp = top_level("/tmp")
    service = Service(args.capctl, served, cwd, artifacts, token_file, tmp_view, access_file)
    try:
        port = service.port()
        if not check(port is not None, f"{label}: the service starts and says service-started",
                     open(service.stderr_path, errors="replace").read()[-2000:]):
            return
        status, headers, body = request(port, "GET", "/openapi.json", token)
        if role:
            # Every role may read the document; the roles each operation needs are in it.
            check(b'"x-capctl-role"' in body, f"{label}: the document says which role each operation needs")
        if not check(status == 200, f"{label}: GET /openapi.json answers 200", f"{status} {body[:200]!r}"):
            return
        document = json.loads(body)
        schema_path = os.path.join(artifacts, "openapi.json")
        with open(schema_path, "wb") as out:
            out.write(body)

        served_ops, missing = served_operations(port, token, document)
        for method, path in missing:
            print(f"NOTE {label}: {method} {path} is in the document but not served by this build: left out of the run", flush=True)
        check(len(served_ops) >= 14, f"{label}: the service serves the document's operations ({len(served_ops)} served)",
              f"only {served_ops}")

        command = [st, "run", schema_path, "--url", f"http://127.0.0.1:{port}", "--checks", CHECKS, "--mode", "all",
                   "--max-examples", str(args.role_examples if role else args.max_examples), "--workers", "1", "--request-timeout", "30",
                   "--generation-database", "none", "--no-color", "--exclude-path", ENDLESS[0], "--exclude-path", ENDLESS[1],
                   "--suppress-health-check", "all", "--output-truncate", "true",
                   "--report", "vcr", "--report-vcr-path", os.path.join(artifacts, "requests.yaml")]
        if args.seed is not None:
            command += ["--seed", str(args.seed)]
        excluded = {f"{m} {p}" for m, p in missing}
        if excluded:
            # st's filters take one kind at a time: leave out each missing operation by its operationId.
            for path, item in document["paths"].items():
                for method, operation in item.items():
                    if f"{method.upper()} {path}" in excluded and "operationId" in operation:
                        command += ["--exclude-operation-id", operation["operationId"]]
        if token:
            command += ["--header", f"Authorization: Bearer {token}"]
        environment = dict(os.environ, SCHEMATHESIS_HOOKS="contract_hooks",
                           PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        printable = [part if token is None or token not in part else part.replace(token, "TOKEN") for part in command]
        print("RUN " + " ".join(printable), flush=True)
        started = time.monotonic()
        result = subprocess.run(command, cwd=artifacts, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = result.stdout.decode(errors="replace")
        if token:
            output = output.replace(token, "TOKEN")
        print(output, flush=True)
        print(f"schemathesis took {time.monotonic() - started:.0f} s", flush=True)
        check(result.returncode == 0, f"{label}: schemathesis finds every answer as the document says (st exit {result.returncode})")

        errors = service.server_errors()
        check(not errors, f"{label}: no request was answered with a 5xx", "\n".join(errors[:20]))
        check(service.process.poll() is None, f"{label}: the service still runs after the run")
        status, _, body = request(port, "GET", "/session", token)
        ok = status == 200 and json.loads(body).get("state") == "running"
        check(ok, f"{label}: GET /session answers 200 with state running", f"{status} {body[:200]!r}")

        # GET /events: an endless stream; its head and first comment.
        events_path = "/events" if not token else f"/events?access_token={token}"
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}{events_path}", headers={"Host": f"127.0.0.1:{port}"})
            with urllib.request.urlopen(req, timeout=10) as response:
                first = response.readline().decode()
                check(response.status == 200 and response.headers.get("Content-Type", "").startswith("text/event-stream")
                      and first.startswith(": capctl events"),
                      f"{label}: GET /events opens a text/event-stream", f"{response.status} {response.headers} {first!r}")
        except (OSError, urllib.error.URLError) as error:
            check(False, f"{label}: GET /events opens a text/event-stream", str(error))

        # GET /stream.mjpg: an endless multipart stream; its head and first part. A nonsense size: 400.
        view_path = "/stream.mjpg?width=320&fps=5" + (f"&access_token={token}" if token else "")
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}{view_path}", headers={"Host": f"127.0.0.1:{port}"})
            with urllib.request.urlopen(req, timeout=10) as response:
                kind = response.headers.get("Content-Type", "")
                first = response.readline().decode()
                part_headers = [response.readline().decode().strip() for _ in range(3)]
                check(response.status == 200 and kind == "multipart/x-mixed-replace; boundary=capctl-frame"
                      and first.strip() == "--capctl-frame" and "Content-Type: image/jpeg" in part_headers,
                      f"{label}: GET /stream.mjpg opens a multipart stream of JPEG pictures", f"{response.status} {kind} {first!r} {part_headers}")
        except (OSError, urllib.error.URLError) as error:
            check(False, f"{label}: GET /stream.mjpg opens a multipart stream of JPEG pictures", str(error))
        status, headers, body = request(port, "GET", "/stream.mjpg?width=0", token)
        check(status == 400 and "error" in json.loads(body or b"{}"), f"{label}: GET /stream.mjpg?width=0 is a 400 with an error",
              f"{status} {body[:200]!r}")

        if role in ("view", "control"):
            made = sorted(os.listdir(served))
            check(not made, f"{label}: a role that may not record made nothing in --dir", str(made[:20]))
            status, _, body = request(port, "GET", "/recordings", token)
            check(status == 403, f"{label}: GET /recordings is refused (403)", f"{status} {body[:200]!r}")
        else:
            # What the generated input left running is stopped, as a client would.
            status, _, body = request(port, "GET", "/recordings", token)
            running = [r["id"] for r in json.loads(body).get("recordings", []) if r.get("state") != "finished"] if status == 200 else []
            for identifier in running:
                try:
                    status, _, body = request(port, "POST", f"/recordings/{identifier}/stop", token, timeout=60)
                    check(status == 200, f"{label}: POST /recordings/{identifier}/stop finishes it", f"{status} {body[:300]!r}")
                except OSError as error:
                    check(False, f"{label}: POST /recordings/{identifier}/stop answers within 60 s", str(error))
            status, _, body = request(port, "GET", "/recordings", token)
            left = [r["id"] for r in json.loads(body).get("recordings", []) if r.get("state") != "finished"] if status == 200 else ["?"]
            total = len(json.loads(body).get("recordings", [])) if status == 200 else 0
            check(not left, f"{label}: every recording is finished once stopped ({total} made, {len(running)} stopped here)", str(left))
    finally:
        exit_status = service.stop()
    check(exit_status == 0, f"{label}: SIGTERM stops the service with exit status 0", f"exit status {exit_status}")
    check(any('"service-stopped"' in line for line in service.lines[-3:]), f"{label}: its last event is service-stopped",
          "\n".join(service.lines[-3:]))
    after_parent = listing(parent, skip={"served"})
    check(after_parent == before_parent, f"{label}: nothing was made beside --dir or in the service's working folder",
          f"new: {sorted(after_parent - before_parent)[:20]}, gone: {sorted(before_parent - after_parent)[:20]}")
    new_root = top_level("/") - before_root
    check(not new_root, f"{label}: nothing appeared in /", str(sorted(new_root)))
    if tmp_view:
        made = listing(tmp_view)
        check(not made, f"{label}: nothing appeared in /tmp (as the service saw it)", str(sorted(made)[:20]))
    else:
        new_tmp = top_level("/tmp") - before_tmp
        check(not new_tmp, f"{label}: nothing appeared in /tmp", str(sorted(new_tmp)[:20]))
    if args.keep:
        print(f"kept: {parent} and {artifacts}")
    else:
        shutil.rmtree(parent, ignore_errors=True)
        shutil.rmtree(artifacts, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--capctl", default=os.path.join(ROOT, ".build", "debug", "capctl"))
    parser.add_argument("--schemathesis", default=os.path.join(ROOT, ".venv-test", "bin", "st"))
    parser.add_argument("--max-examples", type=int, default=int(os.environ.get("CAPCTL_CONTRACT_EXAMPLES", "100")))
    parser.add_argument("--role-examples", type=int, default=int(os.environ.get("CAPCTL_CONTRACT_ROLE_EXAMPLES", "20")),
                        help="examples per operation in each role's run")
    parser.add_argument("--roles", default="view,record,control,admin", help="the roles to run as, comma-separated (none: '')")
    parser.add_argument("--seed", type=int, default=os.environ.get("CAPCTL_CONTRACT_SEED"))
    parser.add_argument("--keep", action="store_true", help="keep the folders of each run")
    args = parser.parse_args()

    if not os.access(args.schemathesis, os.X_OK):
        print(f"contract: schemathesis is missing ({args.schemathesis}); run scripts/setup, which installs it into .venv-test/",
              file=sys.stderr)
        return 2
    if not os.access(args.capctl, os.X_OK):
        print(f"contract: no capctl at {args.capctl}; run swift build", file=sys.stderr)
        return 2
    version = subprocess.run([args.schemathesis, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    tmp_view_ok = private_tmp_works()
    print(f"contract: {version}; capctl {args.capctl}; /tmp seen by the service: "
          f"{'a private empty folder' if tmp_view_ok else 'the real /tmp (unshare cannot mount here)'}", flush=True)
    started = time.monotonic()
    for with_token in (False, True):
        run_once(args, args.schemathesis, with_token, tmp_view_ok)
    for role in filter(None, args.roles.split(",")):
        run_once(args, args.schemathesis, True, tmp_view_ok, role=role)
    print(f"\ncontract: took {time.monotonic() - started:.0f} s")
    print(f"contract: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
