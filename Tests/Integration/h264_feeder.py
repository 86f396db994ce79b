#!/usr/bin/env python3
"""A camera that sends H.264 with its parameter sets in a buffer of their own.

    h264_feeder.py DEVICE WIDTH HEIGHT FPS STREAM

Sets DEVICE (a v4l2loopback node) to V4L2_PIX_FMT_H264 WIDTHxHEIGHT on the output side
and its frame interval to 1/FPS, then writes the H.264 Annex B stream STREAM ("-" for
stdin, or a named pipe, e.g. from ffmpeg -re ... -f h264 -; a regular file is played over
and over) into it from its first IDR picture with an SPS, one access unit per frame
interval, until killed or the stream ends. Each access unit is one write(2), that
is one buffer for readers, except that an access unit that carries an SPS and a PPS is
two: first the SPS and PPS alone, then the rest (SEI, slices) with the next write(2).
ffmpeg's v4l2 output cannot do that: it writes each packet whole."""
import fcntl
import os
import struct
import sys
import time

V4L2_BUF_TYPE_VIDEO_OUTPUT = 2
V4L2_FIELD_NONE = 1
V4L2_PIX_FMT_H264 = int.from_bytes(b"H264", "little")


def iowr(nr, size):
    return (3 << 30) | (size << 16) | (ord("V") << 8) | nr


# struct v4l2_format: __u32 type; 4 bytes of padding (the union holds pointers); union fmt[200]
VIDIOC_S_FMT = iowr(5, 208)
# struct v4l2_streamparm: __u32 type; union parm[200]
VIDIOC_S_PARM = iowr(22, 204)

START = b"\x00\x00\x01"


def nal_units(chunks):
    """The NAL units (type, bytes with their start code) of an Annex B byte stream that
    comes in chunks; a unit is complete when the next start code (or the end) is seen."""
    data = b""
    begin = -1
    for chunk in chunks:
        data += chunk
        if begin < 0:
            begin = data.find(START)
            if begin < 0:
                data = data[-2:]
                continue
        while True:
            nxt = data.find(START, begin + 3)
            if nxt < 0:
                break
            end = nxt - 1 if data[nxt - 1] == 0 else nxt  # a 4-byte start code's zero
            unit = data[begin:end]
            if len(unit) > 3:
                yield unit[3] & 0x1F, (b"\x00" if unit[:3] == START else b"") + unit
            begin = nxt
        data = data[begin:]
        begin = 0
    if begin >= 0 and len(data) > 3:
        yield data[3] & 0x1F, (b"\x00" if data[:3] == START else b"") + data


def access_units(units):
    """Groups NAL units into access units (H.264 7.4.1.2.3): a new one starts at an AUD,
    SPS, PPS or SEI after a picture's slices, or at a slice whose first_mb_in_slice is 0
    (its header's first bit set)."""
    current = []
    has_slice = False
    for kind, unit in units:
        first_slice = kind in (1, 5) and len(unit) > 5 and unit[5] & 0x80
        if current and has_slice and (kind in (6, 7, 8, 9) or first_slice):
            yield current
            current, has_slice = [], False
        current.append((kind, unit))
        has_slice = has_slice or kind in (1, 5)
    if current:
        yield current


def buffers(au):
    """The write(2)s of one access unit: SPS and PPS alone first when it carries them."""
    params = b"".join(unit for kind, unit in au if kind in (7, 8))
    if not params:
        return [b"".join(unit for _, unit in au)]
    return [params, b"".join(unit for kind, unit in au if kind not in (7, 8))]


def chunks(path):
    """The stream's bytes: from stdin or a pipe once, a regular file over and over."""
    if path == "-" or not os.path.isfile(path):
        fd = 0 if path == "-" else os.open(path, os.O_RDONLY)
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            yield chunk
    while True:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(65536)
                if not chunk:
                    break
                yield chunk


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__.split("\n\n")[1])
    device, path = sys.argv[1], sys.argv[5]
    width, height, fps = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    fd = os.open(device, os.O_RDWR)
    # v4l2_pix_format: width, height, pixelformat, field, bytesperline, sizeimage, colorspace,
    # priv, flags, ycbcr_enc, quantization, xfer_func
    pix = struct.pack("<12I", width, height, V4L2_PIX_FMT_H264, V4L2_FIELD_NONE, 0, 0, 0, 0, 0, 0, 0, 0)
    fmt = bytearray(struct.pack("<I4x", V4L2_BUF_TYPE_VIDEO_OUTPUT) + pix)
    fmt += bytes(208 - len(fmt))
    fcntl.ioctl(fd, VIDIOC_S_FMT, fmt)
    got = struct.unpack_from("<3I", fmt, 8)
    if got != (width, height, V4L2_PIX_FMT_H264):
        sys.exit(f"h264_feeder: {device} took the format as {got}")
    # v4l2_outputparm: capability, outputmode, timeperframe (numerator, denominator), ...
    parm = bytearray(struct.pack("<5I", V4L2_BUF_TYPE_VIDEO_OUTPUT, 0, 0, 1, fps))
    parm += bytes(204 - len(parm))
    fcntl.ioctl(fd, VIDIOC_S_PARM, parm)

    interval = 1.0 / fps
    deadline = time.monotonic()
    started = False
    for au in access_units(nal_units(chunks(path))):
        if not started:
            # a reader can only start at an IDR picture with its parameter sets
            if not any(kind == 7 for kind, _ in au) or not any(kind == 5 for kind, _ in au):
                continue
            started = True
        now = time.monotonic()
        if deadline > now:
            time.sleep(deadline - now)
        elif now - deadline > 1:
            deadline = now  # far behind (a stalled machine): no burst to catch up
        for data in buffers(au):
            if os.write(fd, data) != len(data):
                sys.exit(f"h264_feeder: short write to {device}")
        deadline += interval


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
