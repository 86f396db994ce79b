#!/usr/bin/python3
"""Clients of capctl serve's live view (GET /stream.mjpg), for its tests.

Each mode prints one JSON object on stdout.

  read URL SECONDS            one viewer: every part checked (headers, length, a whole JPEG)
  crowd URL SECONDS N STALLED N viewers at once, STALLED of which never read after the headers
  cut URL COUNT               COUNT viewers, one after another, that hang up in the middle of a picture
  opencv URL SECONDS          OpenCV's VideoCapture (Debian's python3-opencv): frames, size, rate
"""
import json
import socket
import sys
import threading
import time
from urllib.parse import urlsplit


def jpeg_size(data):
    """(width, height) from a JPEG's SOF marker, or None."""
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    return None


class Stream:
    """One GET of the stream over a plain socket, so that a test decides how (and whether) it reads."""

    def __init__(self, url, receive_buffer=None):
        parts = urlsplit(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(10)
        self.sock.connect((parts.hostname, parts.port))
        path = parts.path + ("?" + parts.query if parts.query else "")
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n\r\n".encode())
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
        self.boundary = None
        kind = self.headers.get("content-type", "")
        if "boundary=" in kind:
            self.boundary = kind.split("boundary=", 1)[1].strip().strip('"')
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.raw = b""  # de-chunked body not yet parsed

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("the service closed the connection")
        self.buffer += data

    def _until(self, marker):
        while marker not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _body(self, count):
        """At least `count` bytes of the body (chunked transfer undone)."""
        while len(self.raw) < count:
            if not self.chunked:
                if not self.buffer:
                    self._fill()
                self.raw += self.buffer
                self.buffer = b""
                continue
            size_line = self._until(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                raise EOFError("the stream ended")
            while len(self.buffer) < size + 2:
                self._fill()
            self.raw += self.buffer[:size]
            self.buffer = self.buffer[size + 2:]

    def _body_until(self, marker):
        while marker not in self.raw:
            self._body(len(self.raw) + 1)
        head, self.raw = self.raw.split(marker, 1)
        return head

    def part(self):
        """The next part: (headers, JPEG bytes, arrival time)."""
        preamble = self._body_until(b"\r\n\r\n").decode("latin-1")
        lines = [l for l in preamble.split("\r\n") if l]
        if not lines or lines[0] != "--" + self.boundary:
            raise ValueError(f"a part does not begin with its boundary: {preamble[:80]!r}")
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        length = int(headers["content-length"])
        self._body(length + 2)
        data, rest = self.raw[:length], self.raw[length:]
        if rest[:2] != b"\r\n":
            raise ValueError("a part's picture is not followed by CRLF")
        self.raw = rest[2:]
        return headers, data, time.time()

    def close(self):
        self.sock.close()


def read(url, seconds):
    stream = Stream(url)
    result = {"status": stream.status, "contentType": stream.headers.get("content-type"), "parts": 0, "bytes": 0,
              "sizes": [], "frames": [], "latencies": [], "errors": []}
    if stream.status != 200:
        return result
    start = time.time()
    first = None
    while time.time() - start < seconds:
        headers, data, arrived = stream.part()
        if headers.get("content-type") != "image/jpeg":
            result["errors"].append(f"part of type {headers.get('content-type')}")
        if data[:2] != b"\xff\xd8" or data[-2:] != b"\xff\xd9":
            result["errors"].append("a part is not a whole JPEG")
        size = jpeg_size(data)
        if size and list(size) not in result["sizes"]:
            result["sizes"].append(list(size))
        result["parts"] += 1
        result["bytes"] += len(data)
        result["frames"].append(int(headers.get("x-frame", -1)))
        result["latencies"].append(arrived - float(headers.get("x-timestamp", "nan")))
        if first is None:
            first = arrived
        last = arrived
    stream.close()
    # The rate over the parts after the first (the first may be the view's newest, handed at once).
    result["fps"] = (result["parts"] - 1) / (last - first) if result["parts"] > 1 and last > first else 0
    return result


def crowd(url, seconds, count, stalled):
    results = [None] * count
    streams = []

    def reader(index):
        try:
            stream = Stream(url)
            streams.append(stream)
            if stream.status != 200:
                results[index] = {"status": stream.status}
                return
            parts, first, last = 0, None, None
            end = time.time() + seconds
            while time.time() < end:
                stream.part()
                parts += 1
                now = time.time()
                first = first or now
                last = now
            results[index] = {"status": 200, "parts": parts, "fps": (parts - 1) / (last - first) if last and last > first else 0}
        except Exception as error:  # reported, not raised: the test says which viewer failed
            results[index] = {"error": repr(error)}

    silent = []
    for _ in range(stalled):
        # A viewer that never reads, with a small receive buffer: the service's writes to it stall at once.
        stream = Stream(url, receive_buffer=4096)
        silent.append(stream.status)
        streams.append(stream)
    threads = [threading.Thread(target=reader, args=(i,)) for i in range(count - stalled)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for stream in streams:
        stream.close()
    return {"stalledStatus": silent, "readers": results[:count - stalled]}


def cut(url, count):
    hung_up, refused = 0, []
    for _ in range(count):
        stream = Stream(url)
        if stream.status != 200:
            refused.append(stream.status)
            stream.close()
            continue
        # The first part's headers and some of its picture, then away.
        stream._body_until(b"\r\n\r\n")
        stream._body(100)
        stream.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        stream.close()
        hung_up += 1
    return {"hungUp": hung_up, "refused": refused}


def opencv(url, seconds):
    import cv2
    capture = cv2.VideoCapture(url)
    if not capture.isOpened():
        return {"opened": False}
    ok, frame = capture.read()
    shapes = set()
    count = 0
    start = time.time()
    while ok and time.time() - start < seconds:
        ok, frame = capture.read()
        if ok:
            count += 1
            shapes.add(frame.shape)
    elapsed = time.time() - start
    capture.release()
    return {"opened": True, "frames": count, "fps": count / elapsed, "shapes": sorted(list(s) for s in shapes)}


def main():
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "read":
        result = read(url, float(sys.argv[3]))
    elif mode == "crowd":
        result = crowd(url, float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif mode == "cut":
        result = cut(url, int(sys.argv[3]))
    elif mode == "opencv":
        result = opencv(url, float(sys.argv[3]))
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
