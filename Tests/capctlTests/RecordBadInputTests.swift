import Foundation
import Glibc
import Testing

/// A fresh folder for one test, removed afterwards.
final class RecordScratch {
    let url: URL
    var path: String { url.path }

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/capctl-record-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        url = URL(fileURLWithPath: String(cString: made))
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// The names in the folder, sorted.
    var contents: [String] { ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted() }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// `capctl record` refuses bad requests before anything is written: one
/// line on stderr naming the option, device or file and the cause, the
/// documented exit status, nothing on stdout, and no file created or
/// changed. Devices are the virtual ones, so no hardware is needed.
struct RecordBadInputTests {
    static let pattern = ["--video", "test-pattern"]
    static let tone = ["--audio", "test-tone"]

    @Test(arguments: [
        // Durations and sizes.
        (pattern + ["--max-duration", "abc", "out.mp4"], Int32(64), "'abc' is invalid for '--max-duration"),
        (pattern + ["--max-duration", "-5", "out.mp4"], 64, "--max-duration"),
        (pattern + ["--max-duration=-5", "out.mp4"], 64, "'-5' is invalid for '--max-duration"),
        (pattern + ["--max-duration", "0", "out.mp4"], 64, "'0' is invalid for '--max-duration"),
        (pattern + ["--max-duration", "1x", "out.mp4"], 64, "'1x' is invalid for '--max-duration"),
        (pattern + ["--max-size", "12Q", "out.mp4"], 64, "'12Q' is invalid for '--max-size"),
        (pattern + ["--max-size=-1", "out.mp4"], 64, "'-1' is invalid for '--max-size"),
        (pattern + ["--max-size", "0", "out.mp4"], 64, "--max-size 0 is too small for a file"),
        (pattern + ["--segment-size", "10K", "seg-%n.mp4"], 64, "--segment-size 10K is too small"),
        (pattern + ["--min-free-space", "lots", "out.mp4"], 64, "'lots' is invalid for '--min-free-space"),
        (pattern + ["--progress-interval", "0", "out.mp4"], 64, "'0' is invalid for '--progress-interval"),
        (pattern + ["--keyframe-interval", "0", "out.mp4"], 64, "'0' is invalid for '--keyframe-interval"),
        // Capture requests.
        (pattern + ["--session-preset", "huge", "out.mp4"], 64, "'huge' is invalid for '--session-preset <preset>'. Please provide one of the following: high, medium, low, 640x480"),
        (pattern + ["--session-preset", "640x480", "--size", "1280x720", "out.mp4"], 64, "--session-preset 640x480 and --size 1280x720 disagree"),
        (pattern + ["--size", "0x0", "out.mp4"], 64, "'0x0' is invalid for '--size"),
        (pattern + ["--size", "abc", "out.mp4"], 64, "'abc' is invalid for '--size"),
        (pattern + ["--size", "16385x16", "out.mp4"], 64, "'16385x16' is invalid for '--size"),
        (pattern + ["--size", "640xx480", "out.mp4"], 64, "'640xx480' is invalid for '--size"),
        (pattern + ["--size", "15x15", "out.mp4"], 64, "test-pattern: a 15x15 frame is not possible"),
        (pattern + ["--size", "641x480", "out.mp4"], 64, "test-pattern: yuv420p needs an even width and height, not 641x480"),
        (pattern + ["--fps", "0", "out.mp4"], 64, "'0' is invalid for '--fps"),
        (pattern + ["--fps", "2000", "out.mp4"], 64, "'2000' is invalid for '--fps"),
        (pattern + ["--pixel-format", "unknown", "out.mp4"], 64, "test-pattern: the test pattern is not drawn in unknown"),
        (pattern + ["--pixel-format", "ABCDEFGHIJKLMNOPQ", "out.mp4"], 64, "--pixel-format 'ABCDEFGHIJKLMNOPQ' is not a fourcc"),
        // Codecs and containers.
        (pattern + ["--video-codec", "mjpeg", "out.webm"], 64, "a WebM file cannot hold mjpeg video"),
        (pattern + ["--video-codec", "h264", "out.webm"], 64, "a WebM file cannot hold h264 video"),
        (tone + ["--audio-codec", "aac", "out.ogg"], 64, "a Ogg file cannot hold aac audio"),
        (tone + ["--audio-codec", "opus", "out.wav"], 64, "a WAV file cannot hold opus audio"),
        (tone + ["--audio-codec", "aac", "out.flac"], 64, "a FLAC file cannot hold aac audio"),
        (tone + ["--audio-codec", "pcm_s16le", "out.mp4"], 64, "a MP4 file cannot hold pcm_s16le audio"),
        (pattern + ["--video-codec", "xvid", "out.mp4"], 64,
         "'xvid' is invalid for '--video-codec <codec>'. Please provide one of the following: h264, hevc, vp9, av1, mjpeg, copy"),
        (pattern + tone + ["--audio-codec", "mp3", "out.mp4"], 64,
         "'mp3' is invalid for '--audio-codec <codec>'. Please provide one of the following: aac, opus, flac, pcm_s16le, pcm_s24le, pcm_s32le, pcm_f32le"),
        (pattern + ["--crf", "99", "out.mp4"], 64, "--crf 99 is out of range"),
        (pattern + ["--crf", "20", "--bitrate", "4M", "out.mp4"], 64, "--crf and --bitrate both set the rate"),
        // Pre-roll and triggers.
        (pattern + ["--pre-roll", "0", "out.mp4"], 64, "'0' is invalid for '--pre-roll"),
        (pattern + ["--pre-roll-memory", "64MiB", "out.mp4"], 64, "--pre-roll-memory bounds a pre-roll; add --pre-roll TIME"),
        (pattern + ["--pre-roll", "5s", "--pre-roll-memory", "100K", "out.mp4"], 64, "--pre-roll-memory 100K is too small to hold a keyframe"),
        (pattern + ["--pre-roll", "5s", "--video-codec", "copy", "out.mp4"], 64, "--pre-roll keeps video as the encoder compresses it"),
        (pattern + ["--pre-roll", "5s", "out.webm"], 64, "a pre-roll keeps video as a shared live encoder compresses it"),
        (pattern + ["--pause-after-still", "2s", "out.mp4"], 64, "--pause-after-still and --min-event tune motion triggering; add --resume-on motion"),
        (pattern + ["--resume-on", "sound", "out.mp4"], 64, "'sound' is invalid for '--resume-on"),
        (pattern + ["--resume-on", "motion:0", "out.mp4"], 64, "'motion:0' is invalid for '--resume-on"),
        (pattern + ["--file-per-event", "out.mp4"], 64, "with --file-per-event, OUT must name each file"),
        (tone + ["--resume-on", "motion", "out.wav"], 64, "--resume-on motion watches a camera's picture; add --video DEVICE"),
        (pattern + ["--bitrate", "0", "out.mp4"], 64, "out.mp4: bit rate must be positive"),
        (pattern + ["--video-codec", "mjpeg", "--crf", "50", "out.mkv"], 64, "MJPEG quality is a quantizer from 2 (best) to 31"),
        // Presets, checked against the encoder the file would use.
        (pattern + ["--preset", "nonsense", "out.mp4"], 64,
         "--preset 'nonsense' is not a libx264 preset; use ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow or placebo"),
        (pattern + ["--preset", "Fast", "--video-codec", "hevc", "out.mkv"], 64, "--preset 'Fast' is not a libx265 preset; use ultrafast"),
        (pattern + ["--preset", "fast", "out.webm"], 64, "--preset 'fast' is not a libvpx-vp9 preset; use a number from -"),
        (pattern + ["--preset", "99", "--video-codec", "vp9", "out.mkv"], 64, "--preset '99' is not a libvpx-vp9 preset; use a number from -"),
        (pattern + ["--preset", "fast", "--video-codec", "mjpeg", "out.mkv"], 64, "--preset: the mjpeg encoder (mjpeg) has no speed presets; leave --preset out"),
        (pattern + ["--preset", "7", "--stream", "udp://127.0.0.1:5000"], 64, "--preset '7' is not a libx264 preset"),
        (pattern + ["--stream-preset", "zippy", "--stream", "udp://127.0.0.1:5000", "out.mp4"], 64,
         "'zippy' is invalid for '--stream-preset <name>'. Please provide one of the following: ultrafast, superfast, veryfast"),
        (pattern + ["--video-codec", "copy", "out.mp4"], 64, "--video-codec copy needs a camera that delivers compressed frames"),
        (pattern + ["--video-codec", "copy", "--crf", "20", "out.mp4"], 64, "--video-codec copy writes frames as they come"),
        (pattern + ["--fragment-interval", "2", "--no-fragments", "out.mp4"], 64, "--fragment-interval and --no-fragments/--faststart contradict"),
        (pattern + ["--threads=-1", "out.mp4"], 64, "--threads -1 is out of range"),
        (pattern + ["--threads", "-1", "out.mp4"], 64, "--threads"),
        (pattern + ["--progress", "xml", "out.mp4"], 64, "'xml' is invalid for '--progress"),
        // Outputs.
        (pattern + ["out"], 64, "cannot tell the container from 'out'"),
        (pattern + ["out.avi"], 64, "cannot tell the container from 'out.avi'"),
        (pattern + ["--segment-duration", "1", "seg-%3n.avi"], 64, "cannot tell the container from 'seg-%3n.avi'"),
        (pattern + ["--segment-duration", "1", "out.mp4"], 64, "OUT must name each file: add %n"),
        (pattern + ["--segment-size", "1M", "out.mp4"], 64, "OUT must name each file: add %n"),
        (pattern + ["missing/out.mp4"], 73, "missing/out.mp4: the directory missing does not exist"),
        (pattern + ["out.wav"], 64, "out.wav: a WAV file holds audio only"),
        (pattern + ["--metadata", "title", "out.mp4"], 64, "--metadata 'title' is not KEY=VALUE"),
        (pattern + ["--metadata", "=x", "out.mp4"], 64, "--metadata '=x' is not KEY=VALUE"),
        (pattern + ["out.mp4", "extra"], 64, "Unexpected argument 'extra'"),
        // Loop recording.
        (pattern + ["--keep-files", "3", "--segment-duration", "1", "out.mp4"], 64, "--keep-files tells the recording's files by their names: OUT needs %n or time fields"),
        (pattern + ["--keep-age", "1h", "--file-per-event", "event.mp4"], 64, "--keep-age tells the recording's files by their names: OUT needs %n or time fields"),
        (pattern + ["--keep-size", "10M", "seg-%n.mp4"], 64, "--keep-size deletes the oldest files of a series: add --segment-duration, --segment-size or --file-per-event"),
        (pattern + ["--on-low-space", "rotate", "dash-%Y%m%d-%H%M%S.mp4"], 64, "--on-low-space rotate deletes the oldest files of a series"),
        (pattern + ["--keep-files", "2", "--segment-duration", "1", "%Y/seg-%n.mp4"], 64, "--keep-files looks for the recording's files in OUT's folder"),
        (pattern + ["--keep-files", "0", "--segment-duration", "1", "seg-%n.mp4"], 64, "--keep-files 0 would keep no file; give 1 or more"),
        (pattern + ["--keep-size", "10K", "--segment-duration", "1", "seg-%n.mp4"], 64, "--keep-size 10K is too small for a file"),
        (pattern + ["--keep-size", "1M", "--segment-size", "2M", "seg-%n.mp4"], 64, "--keep-size 1M cannot hold one --segment-size 2M file"),
        (pattern + ["--on-low-space", "rotate", "--min-free-space", "0", "--segment-duration", "1", "seg-%n.mp4"], 64,
         "--on-low-space rotate acts at the --min-free-space floor, which 0 turns off"),
        (pattern + ["--on-low-space", "delete", "--segment-duration", "1", "seg-%n.mp4"], 64, "'delete' is invalid for '--on-low-space"),
        (pattern + ["--keep-age", "0", "--segment-duration", "1", "seg-%n.mp4"], 64, "'0' is invalid for '--keep-age"),
        (pattern + ["--keep-files", "2", "--stream", "udp://127.0.0.1:5000"], 64, "--keep-files deletes files of a recording; give OUT too"),
        // Devices.
        (tone + ["--audio-alternates", "out.m4a"], 64, "--audio-alternates needs two or more --audio devices"),
        (pattern + tone + tone + ["--audio-alternates", "out.ts"], 64, "out.ts: a MPEG-TS file cannot mark audio tracks as alternates"),
        (["--video", "/dev/video99", "out.mp4"], 66, "/dev/video99: no such file or device"),
        (["--video", "video:99", "out.mp4"], 66, "video:99: no camera with index 99"),
        (["--video", "/dev/null", "out.mp4"], 65, "/dev/null: not a V4L2 device"),
        (["--audio", "hw:99", "out.wav"], 66, "hw:99: no such ALSA capture device: there is no sound card 99"),
        (pattern + ["--audio", "plughw:99,0", "out.mp4"], 66, "plughw:99,0: no such ALSA capture device: there is no sound card 99"),
        (["--audio", "/dev/null", "out.wav"], 65, "/dev/null: not a microphone; name an ALSA capture device as hw:CARD,DEVICE"),
        (["--video", "file:/nonexistent/clip.y4m", "out.mp4"], 66, "/nonexistent/clip.y4m: no such file to replay"),
        (["--video", "file:/etc/hostname", "out.mp4"], 65, "/etc/hostname: not a media file"),
        (["--video", "test-tone", "out.mp4"], 65, "test-tone: not a video capture device (it is a virtual microphone)"),
        (["--audio", "test-pattern", "out.wav"], 65, "test-pattern: not an audio capture device (it is a virtual camera)"),
        (["--video", "test-pattern:2", "out.mp4"], 64, "test-pattern:2: the test pattern takes no parameter"),
        (["--audio", "test-tone:abc", "out.wav"], 64, "test-tone:abc: 'abc' is not a tone frequency"),
        (["--audio", "test-tone:0", "out.wav"], 64, "test-tone:0: '0' is not a tone frequency"),
        (["--audio", "test-tone:30000", "out.wav"], 64, "test-tone:30000: '30000' is not a tone frequency"),
        (["--audio", "virtual:nothing", "out.wav"], 66, "virtual:nothing: no such virtual device"),
        (tone + ["--channels", "0", "out.wav"], 64, "--channels 0 is out of range"),
        (tone + ["--channels", "3", "out.wav"], 64, "test-tone: the test tone has 1 or 2 channels, not 3"),
        (tone + ["--sample-rate", "5", "out.wav"], 64, "--sample-rate 5 is out of range"),
        (tone + ["--sample-rate", "384000", "out.wav"], 64, "test-tone: the test tone is not made at 384000 Hz"),
        (tone + ["--audio-bitrate", "0", "out.m4a"], 64, "out.m4a: bit rate must be positive"),
        (["--audio", "test-tone,level=loud", "out.wav"], 64, "test-tone,level=loud: level 'loud' is not a level; give dBFS up to 0"),
        (["--audio", "test-tone,level=3", "out.wav"], 64, "test-tone,level=3: level '3' is not a level"),
        (["--audio", "test-tone:880,volume=-3", "out.wav"], 64, "the test tone takes level=DBFS and delay=TIME after commas"),
        (["--audio", "test-tone,delay=later", "out.wav"], 64, "delay 'later' is not a time"),
        // The microphone watchdog.
        (tone + ["--silence-threshold", "-50", "out.wav"], 64, "--silence-threshold sets what --silence-timeout counts as silence; add --silence-timeout TIME"),
        (tone + ["--silence-timeout", "1", "--silence-threshold", "6", "out.wav"], 64, "'6' is invalid for '--silence-threshold"),
        (tone + ["--silence-timeout", "1", "--silence-threshold", "-170dB", "out.wav"], 64, "'-170dB' is invalid for '--silence-threshold"),
        (tone + ["--silence-timeout", "0", "out.wav"], 64, "'0' is invalid for '--silence-timeout"),
        (pattern + ["--silence-timeout", "5s", "out.mp4"], 64, "--silence-timeout listens to microphones; add --audio DEVICE"),
        // Several cameras.
        (["--video", "test-pattern,size=abc", "out.mp4"], 64, "--video test-pattern: size=abc is not WxH"),
        (["--video", "test-pattern,fps=30,framerate=30", "out.mp4"], 64, "'framerate=30' is not a camera option"),
        (["--video", "test-pattern,fps=30,fps=15", "out.mp4"], 64, "fps= is given twice for one camera"),
        (["--video", "test-pattern,fps=0", "out.mp4"], 64, "--video test-pattern: fps=0 is not a rate"),
        (["--video", "test-pattern,size=8x8"] + pattern + ["out.mp4"], 64, "test-pattern: a 8x8 frame is not possible"),
        (["--video", "file:/nonexistent/a,b.y4m,fps=10", "out.mp4"], 66, "/nonexistent/a,b.y4m: no such file to replay"),
        (pattern + ["cam%c.mp4"], 64, "%c in OUT numbers the cameras' files; it needs two or more --video cameras"),
        (pattern + ["--stop-on-device-loss", "out.mp4"], 64, "--stop-on-device-loss concerns several cameras"),
        (pattern + pattern + ["--stream", "rtmp://127.0.0.1:1/live/x", "out.mp4"], 64, "a stream carries one camera"),
        (pattern + pattern + ["--pre-roll", "2", "out.mp4"], 64, "--pre-roll and --resume-on watch or keep one camera"),
        (["--video", "test-pattern,size=640x360", "--session-preset", "1280x720"] + pattern + ["out.mp4"], 64,
         "--session-preset 1280x720 and --video test-pattern,size=640x360 disagree"),
    ])
    func refusedWithOneLineAndNoFile(arguments: [String], status: Int32, message: String) throws {
        let scratch = try RecordScratch()
        let result = try CapctlRun.run(["record"] + arguments, in: scratch.url)
        #expect(result.status == status, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty, "stdout: \(result.stdout)")
        #expect(result.stderrLines.count == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.hasPrefix("capctl: error: "))
        #expect(result.stderr.contains(message), "stderr: \(result.stderr)")
        #expect(scratch.contents.isEmpty, "left behind: \(scratch.contents)")
    }

    /// An existing output is never touched: not by a recording, not by a segment series.
    @Test(arguments: [
        (["out.mp4"], "out.mp4"),
        (["--segment-duration", "1", "seg-%n.mp4"], "seg-1.mp4"),
        (["--max-duration", "1", "out.mov"], "out.mov"),
    ])
    func anExistingOutputIsLeftAlone(arguments: [String], existing: String) throws {
        let scratch = try RecordScratch()
        let original = Data("precious".utf8)
        try original.write(to: scratch.url.appendingPathComponent(existing))
        let result = try CapctlRun.run(["record", "--video", "test-pattern"] + arguments, in: scratch.url)
        #expect(result.status == 73, "stderr: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("\(existing): already exists; capctl never overwrites a file (use --overwrite to replace it)"))
        #expect(try Data(contentsOf: scratch.url.appendingPathComponent(existing)) == original)
        #expect(scratch.contents == [existing])
    }

    /// A request refused after --overwrite still leaves the old file as it was.
    @Test func aRefusedOverwriteLeavesTheFile() throws {
        let scratch = try RecordScratch()
        let original = Data("precious".utf8)
        try original.write(to: scratch.url.appendingPathComponent("out.mp4"))
        let result = try CapctlRun.run(["record", "--video", "/dev/video99", "--overwrite", "out.mp4"], in: scratch.url)
        #expect(result.status == 66)
        #expect(result.stderrLines.count == 1)
        #expect(try Data(contentsOf: scratch.url.appendingPathComponent("out.mp4")) == original)
    }

    @Test func anOutputThatIsADirectoryIsRefused() throws {
        let scratch = try RecordScratch()
        try FileManager.default.createDirectory(at: scratch.url.appendingPathComponent("d.mp4"), withIntermediateDirectories: false)
        let result = try CapctlRun.run(["record", "--video", "test-pattern", "--overwrite", "d.mp4"], in: scratch.url)
        #expect(result.status == 73, "stderr: \(result.stderr)")
        #expect(result.stderrLines.count == 1)
        #expect(result.stderr.contains("d.mp4: is a directory"))
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: scratch.file("d.mp4"), isDirectory: &isDirectory) && isDirectory.boolValue)
    }
}
