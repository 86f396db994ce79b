#!/usr/bin/env python3
"""Drives capctl serve's page over HTTPS (HTTP/2) in headless Chromium with credentials of two roles.

  page_roles.py --url https://127.0.0.1:PORT/ --out DIR --spki HASH --viewer SECRET --admin SECRET
                [--cameras N] [--markup-file NAME]

The service runs with --tls-cert (Chromium trusts its key by --ignore-certificate-errors-spki-list=HASH,
the base64 SHA-256 of its public key), an access file with a `view` credential (SECRET of --viewer) and
an `admin` one, N cameras and WebRTC off. It checks that:
- the page asks for a credential once and, with the view credential, loads over HTTP/2 (h2);
- every one of the N cameras' live views shows a picture at once, each changing, with the event stream
  open beside them: over HTTP/2 no camera is held to a snapshot by the six-connection limit of HTTP/1.1;
  it reports how long after the credential was given they all showed (`allLiveSeconds`);
- each live view's URL carries a view link (link=v1.view.…), never the secret;
- a view credential sees no record form, no recordings, no files, no photo button, no delete button;
- a view link made by the page's credential (POST /view-links) opens the page of that camera alone,
  with no credential asked for;
- with the admin credential, a file whose name is markup (--markup-file) is listed as text: no element
  is made of it and no script of it runs; delete buttons are shown.
Output as page_check.py's: PASS/FAIL lines, `RESULT {json}`, `page-roles: N passed, N failed`.
"""

import argparse
import json
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import page_check  # noqa: E402
from page_check import READY, Browser, BrowserError, Problems, TimedOut, check, note  # noqa: E402

OVERLAY = "!document.querySelector('#token-overlay').hidden"

# Each camera's live view, sampled: 64 luma values of its <img> drawn into a canvas, or null without a picture.
SAMPLES = """(() => Array.from(document.querySelectorAll('.camera')).map(card => {
  const img = card.querySelector('img.live');
  if (!img || !img.naturalWidth) return {camera: card.dataset.camera, shown: false, transport: card.dataset.transport};
  const canvas = document.createElement('canvas'); canvas.width = 16; canvas.height = 4;
  const context = canvas.getContext('2d'); context.drawImage(img, 0, 0, 16, 4);
  const data = context.getImageData(0, 0, 16, 4).data, luma = [];
  for (let i = 0; i < data.length; i += 4) luma.push(Math.round((data[i] + data[i + 1] + data[i + 2]) / 3));
  return {camera: card.dataset.camera, shown: true, transport: card.dataset.transport, luma, src: img.getAttribute('src')};
}))()"""


def sign_in(browser, secret, what):
    browser.wait_for(OVERLAY, 30, "the credential form")
    browser.type_into("#token-input", secret)
    given = time.monotonic()
    browser.click("#token-submit")
    browser.wait_for(READY, 30, f"the page to load with the {what} credential")
    return given


def run(browser, problems, args):
    result = {}
    browser.phase = "view"
    browser.send("Page.navigate", {"url": args.url})
    try:
        given = sign_in(browser, args.viewer, "view")
        check(True, "the page asks for a credential and loads with the view credential")
    except TimedOut as error:
        check(False, "the page loads with the view credential", f"{error}; it shows: {browser.evaluate('document.body.innerText.slice(0, 300)')}")
        return result
    protocol = browser.evaluate("performance.getEntriesByType('navigation')[0].nextHopProtocol")
    check(protocol == "h2" and browser.evaluate("capctl.http2") is True, "the page came over HTTP/2 and knows it", repr(protocol))
    check(browser.evaluate("document.body.dataset.role") == "view", "the page knows the credential's role (view)")

    # Every camera live at once, beside the event stream.
    try:
        browser.wait_for(f"(() => {{ const s = {SAMPLES}; return s.length === {args.cameras} && s.every(c => c.shown); }})()",
                         60, f"all {args.cameras} cameras to show a picture")
        result["allLiveSeconds"] = round(time.monotonic() - given, 3)
        check(True, f"all {args.cameras} cameras show a picture", f"{result['allLiveSeconds']} s after the credential was given")
    except TimedOut as error:
        check(False, f"all {args.cameras} cameras show a picture", f"{error}: {json.dumps([{k: c.get(k) for k in ('camera', 'shown', 'transport')} for c in browser.evaluate(SAMPLES)])}")
        return result
    try:
        browser.wait_for("document.querySelector('#events-state').dataset.state === 'open'", 15, "the event stream to open")
        check(True, "the event stream is open beside the live views")
    except TimedOut as error:
        check(False, "the event stream is open beside the live views", str(error))
    first = browser.evaluate(SAMPLES)
    browser.idle(1.5)
    second = browser.evaluate(SAMPLES)
    changing = [a["camera"] for a, b in zip(first, second)
                if a["shown"] and b["shown"] and sum(1 for x, y in zip(a["luma"], b["luma"]) if abs(x - y) > 8) >= 4]
    check(len(changing) == args.cameras and all(c["transport"] == "mjpeg" for c in second),
          f"every camera's MJPEG view is live (its picture changes), none held to snapshots", f"changing: {changing}")
    srcs = [c.get("src") or "" for c in second]
    check(all("link=v1.view." in src and args.viewer not in src and "access_token" not in src for src in srcs),
          "each live view's URL carries a view link, never the secret", srcs[0] if srcs else "")
    hidden = browser.evaluate("""({record: document.querySelector('#record-section').hidden,
        files: document.querySelector('#files-section').hidden,
        photo: Array.from(document.querySelectorAll('.camera button.photo')).every(b => b.hidden),
        deletes: document.querySelectorAll('#files button.delete').length})""")
    check(hidden == {"record": True, "files": True, "photo": True, "deletes": 0},
          "a view credential sees no record form, recordings, files, photo or delete button", json.dumps(hidden))
    screenshot = os.path.join(args.out, "page-roles-view.png")
    browser.screenshot(screenshot)
    print(f"SCREENSHOT {screenshot}", flush=True)

    # A view link of camera 1, made with the view credential, opens the page of that camera alone.
    link = browser.evaluate("""fetch('/view-links', {method: 'POST', headers: {'Content-Type': 'application/json',
        Authorization: 'Bearer ' + capctl.token}, body: JSON.stringify({camera: '1', seconds: 600})}).then(r => r.json())""")
    browser.phase = "link"
    browser.evaluate("localStorage.clear()")
    browser.send("Page.navigate", {"url": args.url.rstrip("/") + link["page"]})
    try:
        browser.wait_for(READY, 30, "the page of the view link")
        browser.wait_for(f"(() => {{ const s = {SAMPLES}; return s.length === 1 && s[0].shown; }})()", 30, "the linked camera's picture")
        shown = browser.evaluate("({cameras: Array.from(document.querySelectorAll('.camera')).map(c => c.dataset.camera), "
                                 "asked: capctl.tokenAsked, form: !document.querySelector('#token-overlay').hidden})")
        check(shown == {"cameras": ["1"], "asked": 0, "form": False}, "a view link opens the page of its camera alone, asking nothing", json.dumps(shown))
    except TimedOut as error:
        check(False, "a view link opens the page of its camera", str(error))

    # The admin sees the files, a markup name as text, and delete buttons.
    browser.phase = "admin"
    browser.send("Page.navigate", {"url": args.url})
    try:
        sign_in(browser, args.admin, "admin")
        row = browser.wait_for(f"""(() => {{ const rows = Array.from(document.querySelectorAll('#files tbody tr'));
            const row = rows.find(r => r.dataset.file === {json.dumps(args.markup_file)});
            return row ? {{name: row.querySelector('td.name a').textContent, made: row.querySelectorAll('td.name img, td.name script, td.name b').length,
                          ran: window.__capctlMarkupRan === true, deletes: document.querySelectorAll('#files button.delete').length}} : null; }})()""",
                               20, "the file with markup in its name")
        check(row["name"] == args.markup_file and row["made"] == 0 and not row["ran"],
              "a file name with markup is shown as text: no element made of it, no script run", json.dumps(row))
        check(row["deletes"] >= 1 and browser.evaluate("document.body.dataset.role") == "admin", "the admin sees delete buttons", json.dumps(row))
    except TimedOut as error:
        check(False, "the admin's page lists the files", str(error))
    unexpected = problems.during("view", "link", "admin", allow=lambda item: item["kind"] == "log.network" and "401" in item["text"])
    check(not unexpected, "no console error, exception or failed request", Problems.describe(unexpected))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--spki", required=True, help="base64 SHA-256 of the service's public key (SPKI)")
    parser.add_argument("--viewer", required=True)
    parser.add_argument("--admin", required=True)
    parser.add_argument("--cameras", type=int, default=8)
    parser.add_argument("--markup-file", default='<img src=x onerror="window.__capctlMarkupRan=true">.txt')
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    browser = Browser(args.chromium, extra=[f"--ignore-certificate-errors-spki-list={args.spki}"])
    result, status = {}, 0
    try:
        browser.attach()
        problems = Problems(browser)
        for domain in ("Runtime", "Log", "Page"):
            browser.send(f"{domain}.enable")
        note("Chromium is attached")
        result = run(browser, problems, args)
    except (BrowserError, TimedOut) as error:
        print(f"FAIL the browser could not be driven: {error}", flush=True)
        status = 2
    finally:
        browser.close()
    print("RESULT " + json.dumps(result), flush=True)
    print(f"page-roles: {page_check.passed} passed, {page_check.failed} failed", flush=True)
    return status or (1 if page_check.failed else 0)


if __name__ == "__main__":
    sys.exit(main())
