#!/usr/bin/env python3
"""Read one media file with several independent readers; print one JSON object.

    python3 Tests/Readers/read_media.py FILE [--readers gst-pull,gst-push,...]

capctl writes through FFmpeg's libavformat, so checking its files with ffprobe
alone would let a muxer bug and the matching demuxer's leniency cancel out. These
readers share no code with FFmpeg (ffprobe stays as the baseline). By default
every reader that applies to the container (told by the extension) runs.

gst-pull    GStreamer 1.22: filesrc ! DEMUXER, each demuxer pad through an unbounded queue
            and decodebin into fakesink; pad probes count decoded video frames
            and audio sample frames. Times are stream time, the position a
            player shows (edit lists and the demuxer's segment applied).
gst-push    The same with a queue between filesrc and the demuxer.
mediainfo   The counts MediaInfo states from headers and indexes (no decoding).
mkvmerge    mkvmerge -J (duration, warnings, errors) and per-frame timestamps
            from mkvextract timestamps_v2; MP4 and MPEG-TS are remuxed by
            mkvmerge first, so these are what its own readers made of the file.
            No decoding: audio samples are null, the last audio frame's end is
            its start.
mediaconch  MediaConch's Matroska implementation checker (.mkv/.webm): every
            test not passed is a warning.
ffprobe     One decoding pass (-count_frames -show_frames), samples summed from
            nb_samples, and `ffmpeg -i FILE -f null -` for its warnings.

Pull versus push: a demuxer whose upstream answers "N bytes at offset X" (filesrc)
drives its own loop and reads where it likes, the index first (an MP4's moov at
the end, Matroska's Cues), as players do with local files. Behind a queue it gets
bytes only in order, as from a network, and must cope with an index at the end and
no seeking. Each GStreamer demuxer has separate code for the two (qtdemux honours
one edit list entry only in push mode), so a file can read well one way and not
the other. "mode" tells the mode the demuxer ran in; another than asked is warned.

Each reader: {"video": {"frames", "duration", "start"} | null,
              "audio": {"samples", "duration", "start", "sampleRate"} | null,
              "duration": the container duration it states | null,
              "warnings": [every warning or error it printed],
              "error": null | why it failed or did not read to the end}
Seconds throughout; a track's duration is its last end minus its first start.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

FAMILIES = {'.mp4': 'mp4', '.m4v': 'mp4', '.mov': 'mp4', '.m4a': 'mp4',
            '.mkv': 'matroska', '.mka': 'matroska', '.webm': 'matroska',
            '.ts': 'ts', '.wav': 'wav'}
DEMUXERS = {'mp4': 'qtdemux', 'matroska': 'matroskademux', 'ts': 'tsdemux', 'wav': 'wavparse'}
ALL = ['gst-pull', 'gst-push', 'mediainfo', 'mkvmerge', 'mediaconch', 'ffprobe']
APPLIES = {'mkvmerge': {'mp4', 'matroska', 'ts'}, 'mediaconch': {'matroska'}}
GST_TIMEOUT = 30
TOOL_TIMEOUT = 120


class ToolError(Exception):
    """The reader's tool is missing or hung."""


def result(video=None, audio=None, duration=None, warnings=None, error=None, **extra):
    return dict(video=video, audio=audio, duration=duration, warnings=warnings or [],
                error=error, **extra)


def track(count_key, count, start, end, **extra):
    duration = round(end - start, 6) if None not in (start, end) else None
    return {count_key: count, 'duration': duration,
            'start': None if start is None else round(start, 6), **extra}


def number(value, kind=float):
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def run(cmd, env=None):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, errors='replace',
                              timeout=TOOL_TIMEOUT, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ToolError(f'{cmd[0]} is not installed')
    except subprocess.TimeoutExpired:
        raise ToolError(f'{cmd[0]} did not finish within {TOOL_TIMEOUT} s')


def first_of(items, key):
    """The first item of each kind: a file's first video and first audio track."""
    out = {}
    for item in items:
        out.setdefault(item.get(key), item)
    return out


def lines(text):
    return [line.strip() for line in text.splitlines() if line.strip()]


def ffmpeg_lines(tool, text):
    # without the context address ("[mov,mp4 @ 0x55...]"), runs compare equal
    return [f'{tool}: ' + re.sub(r' @ 0x[0-9a-f]+\]', ']', l) for l in lines(text)]


class Span:
    """Count, earliest start and latest end of one track's frames."""

    def __init__(self):
        self.count, self.first, self.end = 0, None, None

    def add(self, count, t, length):
        self.count += count
        if t is not None:
            self.first = t if self.first is None else min(self.first, t)
            self.end = t + length if self.end is None else max(self.end, t + length)


# --- GStreamer ----------------------------------------------------------------

class _Counter(Span):
    """Probe on one decoded pad; it runs on that stream's thread."""

    def __init__(self, Gst, kind):
        super().__init__()
        self.Gst, self.kind = Gst, kind
        self.segment, self.bpf, self.rate, self.frame_length = None, None, None, 0

    def probe(self, pad, info):
        Gst = self.Gst
        if info.type & Gst.PadProbeType.BUFFER:
            self._buffer(info.get_buffer())
        else:
            event = info.get_event()
            if event.type == Gst.EventType.SEGMENT:
                self.segment = event.parse_segment().copy()
            elif event.type == Gst.EventType.CAPS:
                self._caps(event.parse_caps().get_structure(0))
        return Gst.PadProbeReturn.OK

    def _caps(self, s):
        if self.kind == 'audio':
            self.rate = s.get_int('rate')[1]
            # bytes per sample frame: S16LE is 2 a channel, S24_32LE 4 (its width in memory)
            m = re.match(r'[SUF](\d+)(?:_(\d+))?', s.get_string('format') or '')
            self.bpf = int(m.group(2) or m.group(1)) // 8 * s.get_int('channels')[1] if m else None
        else:
            ok, num, den = s.get_fraction('framerate')
            self.frame_length = den / num if ok and num > 0 else 0

    def _buffer(self, buf):
        Gst = self.Gst
        if self.kind == 'audio':
            n = buf.get_size() // self.bpf if self.bpf else 0
            length = n / self.rate if self.rate else 0
        else:
            n, length = 1, self.frame_length
        if buf.duration != Gst.CLOCK_TIME_NONE:
            length = buf.duration / Gst.SECOND
        t = None
        if buf.pts != Gst.CLOCK_TIME_NONE:
            st = self.segment.to_stream_time(Gst.Format.TIME, buf.pts) if self.segment else buf.pts
            t = (buf.pts if st == Gst.CLOCK_TIME_NONE else st) / Gst.SECOND
        self.add(n, t, length)

    def report(self):
        if self.kind == 'audio':
            return track('samples', self.count, self.first, self.end, sampleRate=self.rate)
        return track('frames', self.count, self.first, self.end)


def read_gst(path, family, push):
    try:
        import gi
        gi.require_version('Gst', '1.0')
        from gi.repository import Gst
    except (ImportError, ValueError) as e:
        return result(error=f'python3-gst-1.0 is not usable: {e}')
    Gst.init(None)
    make = Gst.ElementFactory.make
    pipeline = Gst.Pipeline.new()
    # Push mode as a player reads a network stream: decodebin picks the
    # demuxer (running in push mode behind the queue) and puts a multiqueue
    # after it. A bare demuxer with a queue per pad deadlocks on its own seeks
    # in a file whose tracks are interleaved in chunks of a second or more,
    # which players read.
    chain = [make('filesrc')] + ([make('queue'), make('decodebin')] if push else [make(DEMUXERS[family])])
    if None in chain:
        return result(error=f'GStreamer has no {DEMUXERS[family]}')
    chain[0].set_property('location', path)
    pipeline.add(*chain)
    Gst.Element.link_many(*chain)
    demux = chain[-1]
    counters, lock, warnings = {}, threading.Lock(), []

    def add(factory, **props):
        e = make(factory)
        for k, v in props.items():
            e.set_property(k, v)
        pipeline.add(e)
        e.sync_state_with_parent()
        return e

    def on_decoded(_, pad):
        caps = pad.get_current_caps() or pad.query_caps(None)
        kind = caps.get_structure(0).get_name().split('/')[0]
        # async=false: a sink waiting to preroll would stall a badly interleaved
        # file once the other stream's queue is full
        sink = add('fakesink', sync=False, **{'async': False})
        with lock:
            # the first stream of each kind is counted; any others are only drained
            if kind in ('video', 'audio') and kind not in counters:
                counters[kind] = _Counter(Gst, kind)
                pad.add_probe(Gst.PadProbeType.BUFFER | Gst.PadProbeType.EVENT_DOWNSTREAM,
                              counters[kind].probe)
        pad.link(sink.get_static_pad('sink'))

    def on_demuxed(_, pad):
        # a thread per stream, as playbin's multiqueue gives: with every decoder
        # on the demuxer's one thread, one blocks the others and nothing flows.
        # Unbounded, as a multiqueue grows a queue while another is empty: the
        # pipeline reaches PAUSED only once every decodebin has seen its first
        # buffer, and a track that starts a second or more after the other
        # (audio from 0, a late camera's first frame) would otherwise fill the
        # other's queue behind its prerolled sink and stall the demuxer.
        queue, dec = add('queue', max_size_time=0, max_size_buffers=0, max_size_bytes=0), add('decodebin')
        dec.connect('pad-added', on_decoded)
        queue.link(dec)
        pad.link(queue.get_static_pad('sink'))

    if push:
        demux.connect('pad-added', on_decoded)
    else:
        demux.connect('pad-added', on_demuxed)
        for pad in demux.srcpads:  # wavparse's pad is always there, not added later
            on_demuxed(demux, pad)
    error, bus = None, pipeline.get_bus()
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        error = 'the pipeline would not start'
    deadline = time.monotonic() + GST_TIMEOUT
    wanted = Gst.MessageType.ERROR | Gst.MessageType.WARNING | Gst.MessageType.EOS
    while error is None:
        left = max(0, deadline - time.monotonic())
        msg = bus.timed_pop_filtered(int(left * Gst.SECOND), wanted)
        if msg is None:
            error = f'no end of stream within {GST_TIMEOUT} s'
            break
        if msg.type == Gst.MessageType.EOS:
            break
        is_error = msg.type == Gst.MessageType.ERROR
        err, debug = msg.parse_error() if is_error else msg.parse_warning()
        text = f"{'ERROR' if is_error else 'WARNING'} from {msg.src.get_name()}: {err.message}"
        warnings.append(text + (' (' + ' '.join(debug.split()) + ')' if debug else ''))
        if is_error:
            error = err.message
    if push:
        # the demuxer decodebin chose
        inner = [e for e in demux.iterate_recurse() if e.get_factory() and e.get_factory().get_name() == DEMUXERS[family]]
        demux = inner[0] if inner else demux
    mode = {Gst.PadMode.PULL: 'pull', Gst.PadMode.PUSH: 'push'}.get(
        demux.get_static_pad('sink').mode, 'none')
    if mode != ('push' if push else 'pull'):
        warnings.append(f'{demux.get_name()} ran in {mode} mode')
    ok, duration = pipeline.query_duration(Gst.Format.TIME)
    if push and family == 'ts':
        # tsdemux behind a queue cannot seek to the last PCR: its duration is the file's size
        # over the byte rate it saw, an estimate (4.096 s for a 4 s file written in bursts by a
        # process that was stopped), not a fact of the file; pull mode reads the last PCR.
        ok = False
    pipeline.set_state(Gst.State.NULL)
    with lock:
        found = {kind: c.report() for kind, c in counters.items()}
    return result(found.get('video'), found.get('audio'),
                  duration / Gst.SECOND if ok and duration >= 0 else None,
                  warnings, error, mode=mode)


# --- MediaInfo ----------------------------------------------------------------

def read_mediainfo(path, family):
    # -f: the full report, which alone states Source_FrameCount (below).
    p = run(['mediainfo', '--Output=JSON', '-f', path])
    warnings = lines(p.stderr)
    try:
        tracks = json.loads(p.stdout)['media']['track']
    except (ValueError, KeyError, TypeError):
        return result(warnings=warnings, error=f'mediainfo read nothing (exit {p.returncode})')
    first = first_of(tracks, '@type')
    general, video, audio = first.get('General', {}), first.get('Video'), first.get('Audio')
    if general.get('extra', {}).get('IsTruncated') == 'Yes':
        warnings.append('IsTruncated: Yes')

    def span(t):
        start, duration = number(t.get('Delay', 0)), number(t.get('Duration'))
        return start, start + duration if None not in (start, duration) else None

    # In MP4, QuickTime and M4A MediaInfo counts the sample table's entries: its
    # Source_FrameCount. FrameCount is that count too, unless the edit list lasts longer
    # than the samples' own times (a last frame held on screen for frames lost at the
    # end): then it is the edit's duration times the frame rate, an estimate. Matroska
    # and MPEG-TS hold no frame count: there MediaInfo states the duration times the
    # frame rate of the stream's header, which is the count only when no frame is
    # missing. That is an estimate, not a reading; it is left out (null).
    counts = family in ('mp4',)
    frames = video.get('Source_FrameCount', video.get('FrameCount')) if video else None
    v = track('frames', number(frames, int) if counts else None, *span(video)) if video else None
    a = track('samples', number(audio.get('SamplingCount'), int), *span(audio),
              sampleRate=number(audio.get('SamplingRate'), int)) if audio else None
    return result(v, a, number(general.get('Duration')), warnings)


# --- MKVToolNix ---------------------------------------------------------------

def _identify(path):
    p = run(['mkvmerge', '-J', path])
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise ToolError(f'mkvmerge -J printed no JSON (exit {p.returncode}): {p.stderr.strip()}')


def _timestamps(file):
    """mkvextract writes one line a frame (ms, sorted), then the end of the last frame."""
    with open(file) as f:
        values = [float(v) / 1000 for v in lines(f.read()) if not v.startswith('#')]
    return (len(values) - 1, values[0], values[-1]) if values else (0, None, None)


def _mkv_warnings(output):  # the other lines are progress and status
    return [l for l in lines(output) if l.startswith(('Warning', 'Error'))]


def read_mkvmerge(path, family):
    ident = _identify(path)
    warnings = [w.strip() for w in ident.get('warnings', [])]
    warnings += [f'error: {e.strip()}' for e in ident.get('errors', [])]
    container = ident.get('container', {})
    if not container.get('recognized') or not container.get('supported'):
        return result(warnings=warnings, error='mkvmerge does not recognise or support this file')
    duration = number(container.get('properties', {}).get('duration'))
    duration = duration / 1e9 if duration is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        mkv = path
        if family != 'matroska':
            # timestamps only come out of Matroska: let mkvmerge's own reader remux it
            mkv = os.path.join(tmp, 'remux.mkv')
            p = run(['mkvmerge', '--ui-language', 'en_US', '-o', mkv, path])
            warnings += _mkv_warnings(p.stdout + p.stderr)
            if p.returncode > 1:
                return result(None, None, duration, warnings, 'mkvmerge could not remux it')
            ident = _identify(mkv)
        picked = {k: t for k, t in first_of(ident.get('tracks', []), 'type').items()
                  if k in ('video', 'audio')}
        if picked:
            p = run(['mkvextract', mkv, 'timestamps_v2'] +
                    [f"{t['id']}:{os.path.join(tmp, kind)}" for kind, t in picked.items()])
            warnings += _mkv_warnings(p.stdout + p.stderr)
            if p.returncode > 1:
                return result(duration=duration, warnings=warnings, error='mkvextract failed')
        found = {kind: _timestamps(os.path.join(tmp, kind)) for kind in picked}
    v = track('frames', *found['video']) if 'video' in found else None
    a = None
    if 'audio' in found:
        rate = picked['audio'].get('properties', {}).get('audio_sampling_frequency')
        a = track('samples', None, *found['audio'][1:], sampleRate=rate)
    return result(v, a, duration, warnings)


# --- MediaConch ---------------------------------------------------------------

def read_mediaconch(path, family):
    with tempfile.TemporaryDirectory() as home:
        # a HOME of its own: MediaConch keeps reports in a database there, and
        # a file recorded again under the same name must be checked afresh
        p = run(['mediaconch', '-mc', '-fx', path], env=dict(os.environ, HOME=home))
    warnings = lines(p.stderr)
    try:
        root = ET.fromstring(p.stdout)
    except ET.ParseError:
        return result(warnings=warnings, error=f'no report from mediaconch (exit {p.returncode})')
    ns = root.tag.split('}')[0] + '}' if root.tag.startswith('{') else ''
    for check in root.iter(ns + 'check'):
        for test in check.iter(ns + 'test'):
            if test.get('outcome') == 'pass':
                continue
            where = '; '.join(f"{v.get('context')} at {v.get('offset')}"
                              for v in test.iter(ns + 'value'))
            warnings.append(f"{check.get('icid')}: {test.get('outcome')}: "
                            f"{test.get('reason') or ''}" + (f' ({where})' if where else ''))
    return result(warnings=warnings)


# --- FFmpeg -------------------------------------------------------------------

def read_ffprobe(path, family):
    p = run(['ffprobe', '-v', 'warning', '-count_frames', '-show_streams', '-show_format',
             '-show_entries', 'frame=media_type,stream_index,pts_time,best_effort_timestamp_time,'
             'pkt_duration_time,duration_time,nb_samples', '-of', 'json', path])
    warnings = ffmpeg_lines('ffprobe', p.stderr)
    try:
        probe = json.loads(p.stdout)
    except ValueError:
        return result(warnings=warnings, error=f'ffprobe printed no JSON (exit {p.returncode})')
    # The decoded frames keep the file's own time base on their way to the
    # null muxer (-enc_time_base -1): on ffmpeg's default 1/frame-rate grid,
    # two frames closer than one frame interval (two cameras cut at the
    # other's frame) would meet at one tick there, a warning about ffmpeg's
    # own output, not the file.
    d = run(['ffmpeg', '-nostdin', '-v', 'warning', '-i', path, '-enc_time_base', '-1', '-f', 'null', '-'])
    warnings += ffmpeg_lines('ffmpeg', d.stderr)
    streams = first_of(probe.get('streams', []), 'codec_type')
    spans = {kind: Span() for kind in streams}
    for f in probe.get('frames', []):
        kind = f.get('media_type')
        if f.get('stream_index') != streams.get(kind, {}).get('index'):
            continue
        t = number(f.get('pts_time'))
        t = number(f.get('best_effort_timestamp_time')) if t is None else t
        # duration_time from FFmpeg 6 on, pkt_duration_time before
        length = number(f.get('duration_time')) or number(f.get('pkt_duration_time')) or 0
        n = (number(f.get('nb_samples'), int) or 0) if kind == 'audio' else 1
        spans[kind].add(n, t, length)
    v = a = None
    if 'video' in streams:  # the count -count_frames states
        sv = spans['video']
        v = track('frames', number(streams['video'].get('nb_read_frames'), int), sv.first, sv.end)
    if 'audio' in streams:
        sa = spans['audio']
        a = track('samples', sa.count, sa.first, sa.end,
                  sampleRate=number(streams['audio'].get('sample_rate'), int))
    error = None if d.returncode == 0 else f'ffmpeg could not decode the file (exit {d.returncode})'
    return result(v, a, number(probe.get('format', {}).get('duration')), warnings, error)


READERS = {'gst-pull': lambda p, f: read_gst(p, f, push=False),
           'gst-push': lambda p, f: read_gst(p, f, push=True),
           'mediainfo': read_mediainfo, 'mkvmerge': read_mkvmerge,
           'mediaconch': read_mediaconch, 'ffprobe': read_ffprobe}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('file')
    parser.add_argument('--readers', help='comma-separated, of: ' + ','.join(ALL))
    args = parser.parse_args()
    family = FAMILIES.get(os.path.splitext(args.file)[1].lower())
    if family is None:
        parser.error(f"unknown container; known extensions: {' '.join(FAMILIES)}")
    if not os.path.isfile(args.file):
        parser.error(f'no such file: {args.file}')
    names = [n for n in ALL if family in APPLIES.get(n, {family})]
    if args.readers:
        names = [n.strip() for n in args.readers.split(',') if n.strip()]
        unknown = [n for n in names if n not in READERS]
        if unknown:
            parser.error(f"unknown readers: {', '.join(unknown)}")
    path, out = os.path.abspath(args.file), {}
    for name in names:
        try:
            if family not in APPLIES.get(name, {family}):
                raise ToolError(f'{name} does not read {family} files')
            out[name] = READERS[name](path, family)
        except ToolError as e:
            out[name] = result(error=str(e))
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write('\n')


if __name__ == '__main__':
    # pyenv's or a venv's python3 cannot see Debian's python3-gi: rerun under Debian's
    try:
        import gi  # noqa: F401
    except ImportError:
        system = '/usr/bin/python3'
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system):
            os.execv(system, [system] + sys.argv)
    main()
