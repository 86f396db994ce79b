#!/usr/bin/env python3
"""Records while the machine starves capctl, then holds every file to what capctl reported.

    python3 Tests/Starvation/starve.py [--condition stop,busy,disk] [--rounds N] [--seed S]
                                       [--capctl PATH] [--keep DIR] [--case NAME...]
                                       [--dir FOLDER] [--stall COMMAND]

Conditions (each case runs under each, --rounds times):
  stop   the recording process is stopped (SIGSTOP) at random moments for 0.3 to
         2 s and continued (SIGCONT): a machine that stops scheduling it, a swap
         storm, a debugger; its devices go on without it.
  busy   three busy loops compete for the two cores for the whole recording.
  disk   the disk the recording writes to stalls: COMMAND (--stall) is run at random
         moments with a length in seconds (0.5 to 2) as its argument, and holds every
         write for that long; recordings go to --dir, on that disk. Writes may be slowed
         all the time besides. The integration test 86-record-slow-disk does this in the
         virtual machine, on a device-mapper delay target (writes 500 ms late) that
         `dmsetup suspend` stalls, as an SD card does.

Cases: MP4, MOV, MKV, WebM, MPEG-TS and M4A; two cameras (a file each); MKV segments;
WebM with two pauses. Every file is read by the independent readers of
Tests/Readers/read_media.py (GStreamer pull and push, MediaInfo, mkvtoolnix,
MediaConch, ffprobe) and must agree with the events capctl printed: frames within
one, audio within one codec frame, durations within one frame, both tracks from 0,
no reader's warning. Losses are allowed only where reported: the frames written
and the frames reported dropped add up to what the cameras sent over the recorded
time, the audio to the time the files hold, and the silence the writer put in to keep
sync is no more than the audio reported lost.

Prints one line per run ("PASS condition case" or "FAIL condition case: why"),
then "N passed, N failed"; exits non-zero on any failure. The seed is printed so
that a failure's stops can be replayed (--seed).
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
READER = os.path.join(REPO, 'Tests', 'Readers', 'read_media.py')
FRAME = 1 / 30
CODEC_FRAME = 1024
TONE = ['--audio', 'test-tone']
CAMERA = ['--video', 'test-pattern', '--size', '320x240']


class Case:
    def __init__(self, name, arguments, output, pauses=0, cameras=(30,), audio=True, seconds=4, segment=None):
        self.name, self.arguments, self.output, self.segment = name, arguments, output, segment
        self.pauses, self.cameras, self.audio, self.seconds = pauses, cameras, audio, seconds
        # With %c each camera has a file, and each of them holds the audio.
        self.audio_copies = len(cameras) if '%c' in output else 1


CASES = [Case(ext, CAMERA + TONE, 'out.' + ext) for ext in ('mp4', 'mov', 'mkv', 'webm', 'ts')] + [
    Case('m4a', TONE, 'out.m4a', cameras=()),
    # A file per camera: the readers read one video track of a file.
    Case('two-cameras', ['--video', 'test-pattern,size=320x240,fps=30', '--video', 'test-pattern,size=160x120,fps=15'] + TONE,
         'cam%c.mp4', cameras=(30, 15)),
    Case('segments', CAMERA + TONE + ['--segment-duration', '1.5'], 'seg-%n.mkv', segment=1.5),
    Case('webm-pauses', CAMERA + TONE, 'paused.webm', pauses=2),
]


def read(path):
    """Every reader's view of the file; read_media.py itself breaking counts as a reader that failed."""
    try:
        out = subprocess.run([sys.executable, READER, path], capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return {'read_media': {'error': 'read_media.py took more than 300 s', 'warnings': []}}
    try:
        return json.loads(out.stdout)
    except ValueError:
        return {'read_media': {'error': f'read_media.py printed no reading (exit {out.returncode}): {out.stderr.strip()[-300:]}',
                               'warnings': []}}


class Starver:
    """Applies a condition to a process while it runs."""

    def __init__(self, condition, pid, rng, stall=None):
        self.condition, self.pid, self.rng, self.stall = condition, pid, rng, stall
        self.done = threading.Event()
        self.loops = []
        self.stops = []
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self):
        if self.condition == 'busy':
            self.loops = [subprocess.Popen(['sh', '-c', 'while :; do :; done']) for _ in range(3)]
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()
        for loop in self.loops:
            loop.kill()
            loop.wait()

    def run(self):
        if self.condition == 'disk':
            return self.stall_disk()
        if self.condition != 'stop':
            return
        # The first stop comes after the recording has begun, then one every 1-2.5 s.
        while not self.done.wait(self.rng.uniform(0.8, 2.0)):
            length = self.rng.uniform(0.3, 2.0)
            try:
                os.kill(self.pid, signal.SIGSTOP)
            except ProcessLookupError:
                return
            self.stops.append(round(length, 2))
            time.sleep(length)
            try:
                os.kill(self.pid, signal.SIGCONT)
            except ProcessLookupError:
                return


    def stall_disk(self):
        while not self.done.wait(self.rng.uniform(0.5, 1.5)):
            length = round(self.rng.uniform(0.5, 2.0), 2)
            self.stops.append(length)
            subprocess.run(['sh', '-c', self.stall, 'stall', str(length)], check=False)


def record(case, condition, rng, folder, capctl, stall=None):
    """Runs the case's recording under the condition; returns its events and what the starver did."""
    arguments = [capctl, 'record'] + case.arguments + ['--progress', 'json', '--progress-interval', '0.25']
    if case.pauses == 0:
        arguments += ['--max-duration', str(case.seconds)]
    arguments.append(case.output)
    process = subprocess.Popen(arguments, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = []
    reader = threading.Thread(target=lambda: events.extend(json.loads(line) for line in process.stdout if line.startswith('{')),
                              daemon=True)
    reader.start()
    with Starver(condition, process.pid, rng, stall) as starver:
        if case.pauses:
            # Media time grows only while recording: pause at even steps of it, 0.6 s each.
            step = case.seconds / (case.pauses + 1)
            for number in range(case.pauses + 1):
                wait_for_media(events, step * (number + 1), process)
                if number < case.pauses:
                    process.send_signal(signal.SIGUSR1)
                    time.sleep(0.6)
                    process.send_signal(signal.SIGUSR2)
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=case.seconds * 6 + 60)
        except subprocess.TimeoutExpired:
            process.kill()
    reader.join(timeout=10)
    return process.returncode, events, process.stderr.read(), starver.stops


def wait_for_media(events, seconds, process, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        progress = [e for e in list(events) if e.get('event') == 'progress' and not e.get('paused')]
        if progress and progress[-1].get('duration', 0) >= seconds:
            return
        time.sleep(0.05)


READINGS = []


def check_file(path, reported, problems, label, late=1e-3, lost_frames=0):
    readers = read(path)
    READINGS.append((label, reported, {name: ((r.get('video') or {}).get('frames'), (r.get('audio') or {}).get('samples'))
                                       for name, r in readers.items() if name != 'mediaconch'}))
    if len(readers) < 3:
        problems.append(f'{label}: only readers {sorted(readers)}')
    for name, reading in sorted(readers.items()):
        where = f'{label} {name}'
        if reading.get('error'):
            problems.append(f"{where}: {reading['error']}")
        if reading.get('warnings'):
            problems.append(f"{where} warns: {reading['warnings'][:3]}")
        if name == 'mediaconch':
            continue
        if reported.get('frames') is not None:
            video = reading.get('video') or {}
            count = video.get('frames')
            # MediaInfo counts no Matroska or MPEG-TS frames (read_media.py says why).
            if (count is None and name != 'mediainfo') or (count is not None and abs(count - reported['frames']) > 1):
                problems.append(f"{where}: {count} frames, {reported['frames']} reported")
            # Frames lost at a file's start or end (reported) shorten its video: the first frame
            # comes later, or the last is held on screen, which readers that assume the frame
            # rate's duration for it do not see.
            short = FRAME * lost_frames
            # (mkvmerge counts whole milliseconds at both ends: 2 ms more.)
            if video.get('duration') is not None and not (-short - FRAME - 2e-3 <= video['duration'] - reported['duration'] <= FRAME + 2e-3):
                problems.append(f"{where}: video lasts {video['duration']} s, {reported['duration']} reported")
            # Opus's pre-skip moves WebM's video (README, "Containers"); a camera whose
            # first frame came after the other's starts that much later in its own file.
            allowed = max(0.0075 if path.endswith('.webm') else 1e-3, late, short)
            if video.get('start') is not None and abs(video['start']) >= allowed:
                problems.append(f"{where}: video starts at {video['start']} s")
        if reported.get('audioSamples') is not None:
            audio = reading.get('audio')
            if audio is None:
                problems.append(f'{where}: no audio')
            else:
                if audio.get('samples') is not None and abs(audio['samples'] - reported['audioSamples']) >= CODEC_FRAME:
                    problems.append(f"{where}: {audio['samples']} audio samples, {reported['audioSamples']} reported")
                if audio.get('start') is not None and not (-0.007 < audio['start'] < CODEC_FRAME / 48000):
                    problems.append(f"{where}: audio starts at {audio['start']} s")
        # MPEG-TS states no duration: readers take it from the last time stamps, short as the video.
        short = FRAME * lost_frames if path.endswith('.ts') else 0
        if reading.get('duration') is not None and not (-short - FRAME - 2e-3 <= reading['duration'] - reported['duration'] <= FRAME + 2e-3):
            problems.append(f"{where}: lasts {reading['duration']} s, {reported['duration']} reported")


def check(case, status, events, stderr, folder):
    problems = []
    finished = [e for e in events if e.get('event') == 'finished']
    if status != 0 or not finished:
        return [f'exit {status}, {len(finished)} finished events; stderr: {stderr.strip()[-400:]}']
    end = finished[-1]
    segments = [e for e in events if e.get('event') == 'segment']
    # A file into which nothing decodable came (its time all inside a stop) is removed, and
    # its event says so: no time, no bytes, an error. It is listed nowhere.
    removed = [s for s in segments if s.get('error') and not s.get('bytes') and not s.get('complete')]
    for segment in removed:
        if segment['duration'] or segment['frames'] or segment['audioSamples']:
            problems.append(f"{segment['file']} was removed and its event reports media: {segment}")
        if os.path.exists(os.path.join(folder, segment['file'])):
            problems.append(f"{segment['file']} is reported removed and is there")
    segments = [s for s in segments if s not in removed]
    files = end.get('files') or []
    if [s['file'] for s in segments] != files:
        problems.append(f"segment events name {[s['file'] for s in segments]}, finished lists {files}")
    for name in files:
        if not os.path.exists(os.path.join(folder, name)):
            problems.append(f'{name} is listed and not there')
    named = max((e.get('file', 1) for e in events if e.get('event') == 'progress'), default=1)
    # (A file reported removed was being written when a progress event named it.)
    if named > max(1, len(files) + len(removed)):
        problems.append(f'a progress event names file {named}, and there are {len(files)} and {len(removed)} removed')
    video = bool(case.cameras)
    # Each file but the last is cut where its segment ends, whatever the camera's lag.
    if case.segment:
        for segment in segments[:-1]:
            if abs(segment['duration'] - case.segment) > FRAME + 1e-3:
                problems.append(f"{segment['file']} lasts {segment['duration']} s, not the segment's {case.segment} s")
            if case.audio and abs(segment['audioSamples'] - case.segment * 48000) >= CODEC_FRAME:
                problems.append(f"{segment['file']} holds {segment['audioSamples']} audio samples, not {case.segment * 48000:.0f}")
    for segment in segments:
        reported = {'frames': segment['frames'] if video else None,
                    'audioSamples': segment['audioSamples'] if case.audio else None, 'duration': segment['duration']}
        late = 1 / min(case.cameras) if len(case.cameras) > 1 else 1e-3
        check_file(os.path.join(folder, segment['file']), reported, problems, segment['file'], late, end.get('droppedFrames', 0))
    duration = end['duration']
    # Losses only where reported: what was written and what was lost add up to the recorded
    # time (a limit's, when a removed file's time is in no file).
    recorded = case.seconds if end.get('reason') == 'max-duration' else duration
    if video:
        sent = sum(rate * recorded for rate in case.cameras)
        accounted = end['frames'] + end['droppedFrames']
        # Each camera may start or end one frame apart from the recording's cut, and a file of each segment too.
        slack = 2 * len(case.cameras) * max(1, len(segments))
        if abs(accounted - sent) > slack:
            problems.append(f"{end['frames']} frames + {end['droppedFrames']} dropped = {accounted}, {sent:.0f} sent in {recorded} s")
    if case.audio:
        expected = duration * 48000 * case.audio_copies
        if abs(end['audioSamples'] - expected) > CODEC_FRAME * max(1, len(segments)):
            problems.append(f"{end['audioSamples']} audio samples for {duration} s ({expected:.0f})")
        lost = end['droppedAudioSamples'] * case.audio_copies
        if end.get('silenceInsertedSamples', 0) > lost + CODEC_FRAME * max(1, len(segments)):
            problems.append(f"{end['silenceInsertedSamples']} samples of silence put in, {lost} reported lost")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--condition', default='stop,busy')
    parser.add_argument('--rounds', type=int, default=1)
    parser.add_argument('--seed', type=int, default=None)
    parser.add_argument('--capctl', default=os.environ.get('CAPCTL', os.path.join(REPO, '.build', 'debug', 'capctl')))
    parser.add_argument('--keep', help='keep the files of failed runs under this folder')
    parser.add_argument('--case', action='append', help='run only these cases (by name)')
    parser.add_argument('--dir', help='make the recordings in folders under this one')
    parser.add_argument('--table', action='store_true', help="print each file's reported and read frames and audio samples")
    parser.add_argument('--stall', help="with --condition disk: a shell command that holds the disk's writes for $1 seconds")
    options = parser.parse_args()
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    print(f'starvation: seed {seed}', flush=True)
    rng = random.Random(seed)
    if 'disk' in options.condition.split(',') and not (options.stall and options.dir):
        parser.error('--condition disk needs --stall COMMAND and --dir FOLDER on the disk it stalls')
    cases = [c for c in CASES if not options.case or c.name in options.case]
    passed = failed = 0
    for round_number in range(options.rounds):
        for condition in options.condition.split(','):
            for case in cases:
                folder = tempfile.mkdtemp(prefix='capctl-starve-', dir=options.dir)
                started = time.monotonic()
                status, events, stderr, stops = record(case, condition, rng, folder, options.capctl, options.stall)
                problems = check(case, status, events, stderr, folder)
                label = f'{condition} {case.name}'
                took = time.monotonic() - started
                end = next((e for e in reversed(events) if e.get('event') == 'finished'), {})
                facts = (f"frames {end.get('frames')} dropped {end.get('droppedFrames')}, audio {end.get('audioSamples')} "
                         f"silence {end.get('silenceInsertedSamples')} lost {end.get('droppedAudioSamples')}"
                         + (f', stops {stops}' if stops else ''))
                if problems:
                    failed += 1
                    print(f'FAIL {label} ({took:.1f} s; {facts})', flush=True)
                    for problem in problems:
                        print(f'    {problem}', flush=True)
                    if options.keep:
                        kept = os.path.join(options.keep, f'{round_number}-{condition}-{case.name}')
                        shutil.copytree(folder, kept, dirs_exist_ok=True)
                        with open(os.path.join(kept, 'events.json'), 'w') as f:
                            f.write('\n'.join(json.dumps(e) for e in events))
                else:
                    passed += 1
                    print(f'PASS {label} ({took:.1f} s; {facts})', flush=True)
                if options.table:
                    for file, reported, readings in READINGS:
                        read = ', '.join(f'{name} {v}/{a}' for name, (v, a) in sorted(readings.items()))
                        print(f"    {file}: reported {reported.get('frames')}/{reported.get('audioSamples')}; read {read}", flush=True)
                READINGS.clear()
                shutil.rmtree(folder, ignore_errors=True)
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
