import ArgumentParser
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl record`: video and audio to files, with limits, segments, pause and live progress.
    package struct Record: ParsableCommand {
        package static let configuration = CommandConfiguration(
            commandName: "record",
            abstract: "Record video and audio from capture devices to a file, or to a series of files.",
            discussion: """
            Records from any number of cameras (--video, once for each) and microphones (--audio, \
            once for each; they become separate tracks, or alternates of one another with \
            --audio-alternates) into OUT. The container follows OUT's extension: .mp4, .mov, \
            .mkv, .webm, .ts for movies; .wav, .flac, .m4a, .ogg, .opus for audio only. Without \
            --video or --audio, the first camera is used. Devices may be virtual: test-pattern \
            (a moving pattern with a frame counter), test-tone[:HZ][,level=DBFS][,delay=TIME] (a \
            sine, 440 Hz at -6 dBFS unless asked otherwise; level=silence for none; delay: silence \
            first) and file:PATH (a video file played as a camera, in real time unless --no-realtime).

            SEVERAL CAMERAS
              Each --video may carry its own capture options after commas: \
            DEV[,size=WxH][,fps=N][,pixel-format=F][,overlay=TEXT] (such as --video /dev/video2,size=640x480,fps=15); \
            what it leaves out comes from --size, --fps, --pixel-format and --overlay. The cameras record on \
            one clock into one movie with a video track per camera, in the order given: the file \
            starts at the earliest first frame, and a camera that starts later begins with an empty \
            edit. Each track is named after its camera (name and unique ID; 'capctl info' shows \
            it). %c in OUT (the camera's number from 1; %2c pads it) writes a file per camera \
            instead, each with every audio track; the files start and are cut at the same media \
            time (segments, limits, pause, resume and SIGHUP apply to all at once). Limits count \
            the whole recording (--max-size every file together). A camera the USB bus cannot \
            carry beside the others (ENOSPC when it starts streaming) is refused before any file \
            is created (status 69), naming what to try. A camera that goes away ends its track \
            (with %c, its file) and the others record on, with a camera-lost event, lostCameras \
            in finished and status 69; --stop-on-device-loss stops the whole recording instead. Several cameras take no \
            --stream, --pre-roll or --resume-on, and no --video-codec copy of H.264 or HEVC.

            OVERLAY
              --overlay TEXT burns TEXT into every frame before it is encoded (white on a black \
            box, a 5x7 pixel font of printable ASCII scaled to about a twentieth of the frame's \
            height), so files, streams and photos agree: strftime fields at the frame's capture \
            time in local time, %f its milliseconds, {camera} the camera's name, such as \
            --overlay 'Door %Y-%m-%d %H:%M:%S.%f'. --overlay-position top-left (default), \
            top-right, bottom-left or bottom-right. A camera's own text is --video DEV,overlay=TEXT, \
            the camera's last option, which takes the rest of the argument, commas included. The \
            overlay draws into frames before they are encoded, so --video-codec copy is refused \
            (status 64); a camera's MJPEG, H.264 or HEVC frames are decoded first (a damaged one \
            is counted as dropped), and raw formats it cannot draw into (Bayer, more than 8 bits) \
            are refused.

            LIMITS
              --max-duration stops when the recording (all files, pauses left out) reaches that \
            media time; --max-size stops before the files together would pass that many bytes; \
            --min-free-space stops before the volume's free space falls below it (default 64MiB, \
            so a forgotten recording never fills a disk; 0 turns the check off). Limits count \
            media time and bytes written, never wall-clock time.

            SEGMENTS
              --segment-duration and --segment-size start a new file when the current one \
            reaches that length or size; OUT is then a template: %n is the file's number (%3n \
            pads it to three digits), and strftime fields (%Y%m%d-%H%M%S) take the time the file \
            starts. The switch loses and repeats nothing: every video frame and audio sample is \
            in exactly one file, and each file starts with a keyframe and plays on its own. \
            SIGHUP switches to the next file at once (without %n in OUT, files after the first \
            are named OUT-2, OUT-3 …).

            LOOP RECORDING
              With segments or --file-per-event, --keep-files N, --keep-size SIZE and --keep-age \
            TIME delete the oldest files of OUT's template once a file is finished (--keep-age also \
            once a second): the newest N finished files, the newest finished files that fit in SIZE \
            together (the one just finished stays even when it alone is larger), the files last \
            written less than TIME ago. The file being written comes on top of the bounds and is \
            never deleted. --on-low-space rotate makes the --min-free-space floor delete the oldest \
            files instead of stopping; once only the file being written is left, the recording stops \
            as without it. The recording's files are the regular files in OUT's folder whose names \
            the template could have written (%n as it pads it, each time field as strftime writes \
            it, or with no %n the -2, -3 … of later files): also an earlier run's, which count as the \
            oldest (ordered by the time in their names, then their number), while %n numbers on \
            after the highest already there. No other file is ever touched. OUT needs %n or time \
            fields in the file's name (not its folder). Each deletion is a file-deleted event \
            (file, bytes, reason: keep-files, keep-size, keep-age or low-space); finished lists in \
            files only the recording's files still there and gives deletedFiles and deletedBytes, \
            while bytes stays what was written.

            SIGNALS
              SIGINT or SIGTERM stop the recording and finalize the file; a second SIGINT exits at \
            once (status 130), leaving the file readable up to its last fragment. SIGUSR1 pauses \
            (the paused time is left out of the file), SIGUSR2 resumes. In every container what \
            follows a resume follows what came before it in the media itself, so players need no \
            edit list to leave a pause out; video and audio start together at 0, and an AAC \
            encoder's priming is not written (the first 21 ms fade in). frames, audioSamples and \
            duration are what players decode; in Matroska and MPEG-TS, where the last AAC frame \
            cannot be trimmed, players decode up to 1023 samples of silence more.

            PRE-ROLL AND TRIGGERS
              --start-paused opens the devices and arms the recording, but writes nothing until \
            it is resumed (the file is made then). --pre-roll TIME keeps, while paused, the last TIME of encoded media in \
            memory, beginning at a keyframe (so at least TIME, at most TIME and one keyframe \
            interval before the resume; with a pre-roll the encoder makes a keyframe at least \
            every second, or every --keyframe-interval); a resume writes it first (it counts \
            against the limits) and the file goes on without a \
            gap or a repeated frame, its audio cut to match. It holds at most --pre-roll-memory \
            (default 128MiB; past it the oldest media goes first, counted in progress). \
            --resume-on motion[:PERCENT] watches the camera's picture and resumes when PERCENT of \
            it (default 1) changes against a background that follows slow changes of light; \
            --pause-after-still TIME pauses again once it has been still that long (default 5s), \
            and --min-event TIME lets motion count only once it has lasted that long. \
            --file-per-event finishes the file at each pause and starts a new one from OUT's \
            template at the next resume, so each event with its pre-roll is a file of its own. \
            Motion is read from raw pictures with 8-bit luma, such as YUYV or NV12; other \
            formats are refused. Events: motion-started \
            and motion-ended with score (percent of the picture changed); paused and resumed \
            carry cause (start, signal, motion, still) and resumed, with a pre-roll, preRoll \
            (seconds written from before the resume); progress carries preRoll (duration, bytes, \
            dropped).

            TIME-LAPSE
              --timelapse INTERVAL keeps one frame for every INTERVAL of capture time (the frame \
            nearest each tick of the capture clock, the first at the first frame) and writes them \
            1/RATE apart, so the movie plays at --timelapse-fps RATE (default 30; --fps stays the \
            camera's capture rate). \
            Limits, segments and progress count the movie: --max-duration and --segment-duration \
            are its media time (frames / RATE), while the wall time is frames x INTERVAL \
            (--max-duration 60s at --timelapse 1m records for 30 hours). SIGUSR1 and SIGUSR2 pause \
            and resume as in any recording (the ticks of the pause are left out); SIGINT finishes \
            the file at once, with the frames kept so far. A tick no frame came near (a camera \
            that stalled) counts in droppedByDevice and leaves the frame before it on screen \
            longer. The camera keeps streaming between the ticks, so its exposure and white \
            balance follow the light. The video is encoded (H.264 or HEVC cameras cannot be \
            thinned before decoding: ask for MJPEG or a raw format); no audio, --stream, \
            --video-codec copy, --pre-roll or --resume-on. Fragments count media time too: \
            with the 1 s default a killed time-lapse loses up to RATE x INTERVAL of capture, so \
            give a shorter --fragment-interval for long intervals (such as 0.1s).

            CRASH SAFETY
              MP4 and MOV files are written as 1-second fragments by default, so a recording that is \
            killed or loses power keeps all but about the last second; --fragment-interval changes \
            the length. When the recording ends cleanly (stopped, a limit, a signal, a lost device, \
            a segment switch, low disk space), the file becomes a regular MP4/MOV: one index with \
            every sample, written after the media, the fragments left where they are (finishing \
            writes the index, never a second copy of the media). A recording that was killed stays \
            in fragments; 'capctl repair' makes it regular. --fragments-only keeps the finished file \
            fragmented too (for players that take fragments, such as Media Source Extensions). \
            --no-fragments and --faststart (index first, for the web) write a classic file, which \
            is only playable once finalized.

            STREAMING
              --stream URL (repeatable) also publishes to a media server while recording: \
            rtmp:// and rtmps:// (FLV), srt:// and udp:// (MPEG-TS), rtsp:// (RTSP's own; \
            --stream-format overrides). OUT is then optional. The streams take the file's \
            encoder when its codec fits (one encode for all) or get their own H.264 encoder \
            (--stream-video-bitrate, --stream-preset, or a file that cannot be streamed). A URL's \
            form (scheme, host, port) is checked before recording; its host is looked up when \
            the stream connects, so a name that does not resolve is a server that cannot be \
            reached. A stream that cannot connect, stalls (--stream-timeout) or drops is tried again after \
            0.5, 1, 2, 4, then every 8 s and starts again at a keyframe; its queue never holds up \
            the file, and what it could not send is counted. --stream-required stops the \
            recording instead (status 69). Events: stream-connected, stream-disconnected, \
            stream-reconnecting; progress and finished carry each stream's state, bit rate, \
            bytes, frames, drops and queue latency.

            SOUND LEVELS AND SILENCE
              Each microphone's level is measured as its samples are captured. progress carries \
            audioLevels: for each microphone (its number from 1 and device) the peak and the RMS \
            of each channel over the time since the last progress event, in dBFS (0 is full \
            scale; a full-scale sine reads peak 0, RMS -3.01), rounded to 0.01; digital silence \
            reads -160, the lowest level reported. On a terminal the status line shows a meter \
            for each microphone (its loudest channel's peak). --silence-timeout TIME watches the \
            microphones: audio-silent (microphone, device, since: when it went below, threshold) \
            when every sample of a microphone stays below --silence-threshold (default -60 dBFS) \
            for TIME, and audio-restored (microphone, device, since, silentFor in seconds) when \
            its sound returns. Both are measured on the capture clock (the samples' time stamps), \
            to the audio buffer, not on the wall clock; the recording goes on either way.

            PROGRESS
              On a terminal, one status line refreshes (media time, size, frame rate, dropped \
            samples, bit rate, what is left of each limit, each microphone's level). Otherwise, or \
            with --progress json, one JSON object a line: started, progress (every \
            --progress-interval), paused, resumed, motion-started, motion-ended, audio-silent, \
            audio-restored, camera-lost, segment (a file finished), file-deleted, finished. finished carries reason (stopped, max-duration, \
            max-size, min-free-space, device-disconnected, end-of-input, error), files, duration, \
            bytes, frames, dropped (split in droppedFrames and droppedAudioSamples; only what was \
            lost inside the recorded time counts, not while paused), audioSamples, \
            silenceInsertedSamples (the silence put where audio was lost, so that what follows \
            stays in sync: in the file, so in audioSamples, and never more than was lost), lostCameras \
            (several cameras) and, after an error, error. With several cameras, frames and the frame rate count every camera's \
            frames, and with %c audioSamples counts the audio in each camera's file. A lost video \
            frame leaves a gap (the frame before it shows on): frames is what readers decode, and \
            frames plus droppedFrames what the cameras sent. A recording stopped before any media \
            reached its file leaves no file: finished says stopped with no files, and the exit \
            status is 0. The summary is always printed, also after an error.

            While recording, capctl holds the camera's configuration lock (as 'capctl set --hold' \
            does), so no other program changes its controls; --no-lock leaves it free.

            Exit status: 0 when stopped by a signal, a limit or the end of a file input; 69 when a \
            device went away (the file is finalized) or a camera cannot stream beside the others; 74 on a write error or a full disk; 73 when \
            an output cannot be created; 64 for options the devices or containers cannot take, and \
            stream URLs whose form cannot be published to.
            """
        )

        @Option(name: .long, help: ArgumentHelp("A camera to record, with its own options if it needs them: DEV[,size=WxH][,fps=N][,pixel-format=F][,overlay=TEXT] (overlay= last: it takes the rest); repeat for several cameras.", valueName: "device"))
        var video: [CameraArgument] = []

        @Flag(name: .long, help: "With several cameras, stop the recording when one goes away (by default its track ends and the others go on).")
        var stopOnDeviceLoss = false

        @Option(name: .long, help: ArgumentHelp("A microphone to record; repeat for several tracks.", valueName: "device"))
        var audio: [DeviceArgument] = []

        @Flag(name: .long, help: "Mark the audio tracks as alternates of one another (the first plays by default).")
        var audioAlternates = false

        @OptionGroup var capture: VideoCaptureOptions

        @OptionGroup var audioCapture: AudioCaptureOptions

        @OptionGroup(title: "Overlay") var overlay: OverlayOptions

        @Option(name: .long, help: ArgumentHelp("Stop at this media time.", valueName: "time"))
        var maxDuration: DurationArgument?

        @Option(name: .long, help: ArgumentHelp("Stop before the files pass this size.", valueName: "size"))
        var maxSize: ByteCountArgument?

        @Option(name: .long, help: ArgumentHelp("Stop before free space falls below this (0: no check).", valueName: "size"))
        var minFreeSpace = RecordingOptions.defaultMinFreeSpace

        @Option(name: .long, help: ArgumentHelp("Start a new file every TIME of media.", valueName: "time"))
        var segmentDuration: DurationArgument?

        @Option(name: .long, help: ArgumentHelp("Start a new file before the current one passes SIZE.", valueName: "size"))
        var segmentSize: ByteCountArgument?

        @OptionGroup(title: "Loop recording") var retention: RetentionOptions

        @OptionGroup var encoding: EncodingOptions

        @OptionGroup var trigger: TriggerOptions

        @OptionGroup var silence: SilenceOptions
        @OptionGroup(title: "Time-lapse") var timeLapse: TimeLapseOptions

        @Option(name: .long, help: ArgumentHelp("Add metadata to the file; repeatable.", valueName: "key=value"))
        var metadata: [String] = []

        @Flag(name: .long, help: "Replace output files that exist.")
        var overwrite = false

        @Flag(name: .long, help: "Do not hold the camera's configuration lock while recording (others may change its controls).")
        var noLock = false

        @Option(name: .long, help: ArgumentHelp("Progress as text or json (default: text on a terminal, else json).", valueName: "text|json"))
        var progress: ProgressStyle?

        @Option(name: .long, help: ArgumentHelp("Time between progress reports.", valueName: "time"))
        var progressInterval = RecordingOptions.defaultProgressInterval

        @Flag(name: .long, help: "Same as --progress json.")
        var json = false

        @OptionGroup(title: "Streaming") var streaming: StreamingOptions

        @Argument(help: ArgumentHelp("The file to write, or with segments a template such as 'rec-%3n.mp4' (optional with --stream).", valueName: "out"))
        var out: String?

        package init() {}

        /// The settings these options give: the value `POST /recordings` fills in too.
        package var options: RecordingOptions {
            var options = RecordingOptions()
            options.video = video
            options.stopOnDeviceLoss = stopOnDeviceLoss
            options.audio = audio
            options.audioAlternates = audioAlternates
            options.sessionPreset = capture.sessionPreset
            options.size = capture.size
            options.fps = capture.fps
            options.pixelFormat = capture.pixelFormat
            options.libv4l2 = capture.libv4l2
            options.noRealtime = capture.noRealtime
            options.sampleRate = audioCapture.sampleRate
            options.channels = audioCapture.channels
            options.overlay = overlay.overlay
            options.overlayPosition = overlay.overlayPosition
            options.maxDuration = maxDuration
            options.maxSize = maxSize
            options.minFreeSpace = minFreeSpace
            options.segmentDuration = segmentDuration
            options.segmentSize = segmentSize
            options.keepFiles = retention.keepFiles
            options.keepSize = retention.keepSize
            options.keepAge = retention.keepAge
            options.onLowSpace = retention.onLowSpace
            options.videoCodec = encoding.videoCodec
            options.crf = encoding.crf
            options.bitrate = encoding.bitrate
            options.preset = encoding.preset
            options.maxrate = encoding.maxrate
            options.bufsize = encoding.bufsize
            options.keyframeInterval = encoding.keyframeInterval
            options.threads = encoding.threads
            options.audioCodec = encoding.audioCodec
            options.audioBitrate = encoding.audioBitrate
            options.fragmentInterval = encoding.fragmentInterval
            options.noFragments = encoding.noFragments
            options.faststart = encoding.faststart
            options.fragmentsOnly = encoding.fragmentsOnly
            options.startPaused = trigger.startPaused
            options.preRoll = trigger.preRoll
            options.preRollMemory = trigger.preRollMemory
            options.resumeOn = trigger.resumeOn
            options.pauseAfterStill = trigger.pauseAfterStill
            options.minEvent = trigger.minEvent
            options.filePerEvent = trigger.filePerEvent
            options.silenceTimeout = silence.silenceTimeout
            options.silenceThreshold = silence.silenceThreshold
            options.timelapse = timeLapse.timelapse
            options.timelapseFps = timeLapse.timelapseFps
            options.metadata = metadata
            options.overwrite = overwrite
            options.noLock = noLock
            options.progress = progress
            options.progressInterval = progressInterval
            options.json = json
            options.stream = streaming.stream
            options.streamFormat = streaming.streamFormat
            options.streamRequired = streaming.streamRequired
            options.streamVideoBitrate = streaming.streamVideoBitrate
            options.streamPreset = streaming.streamPreset
            options.streamAudioBitrate = streaming.streamAudioBitrate
            options.streamKeyframeInterval = streaming.streamKeyframeInterval
            options.streamTimeout = streaming.streamTimeout
            options.out = out
            return options
        }

        package func validate() throws {
            do throws(SettingError) {
                try options.validate()
            } catch {
                throw ValidationError(error.message(.commandLine))
            }
        }

        package func run() throws {
            let request = RecordRequest(options: options)
            let status = try RecordingFrontend(request: request).run()
            if status != .success { throw ExitCode(status.rawValue) }
        }
    }
}
