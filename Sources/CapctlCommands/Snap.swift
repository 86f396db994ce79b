import ArgumentParser
import CaptureKit
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

extension Capctl {
    /// `capctl snap`: still photos from a camera, one or a burst, through CaptureKit's PhotoOutput.
    struct Snap: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "snap",
            abstract: "Take a photo (or a burst, or a time-lapse) from a camera as JPEG, PNG or raw.",
            discussion: """
            Opens the camera (--video, default video:0; test-pattern and file:PATH work too), lets \
            it run for --warmup, and writes the next good frame to OUT. Frames the driver flags as \
            broken, and empty ones, never become the photo.

            FORMATS
              --format jpeg, png or raw; without it, OUT's extension decides (.jpg/.jpeg, .png, \
            .raw). A camera's MJPEG frame is written to a JPEG as it came, without decoding and \
            re-encoding (unless --quality asks for re-encoding). An H.264 or HEVC camera's frame is \
            decoded from the keyframe (IDR) before it, then encoded: frames before the stream's \
            first keyframe cannot be decoded and never become the photo. raw writes the frame's \
            bytes as the camera delivered them (an H.264 access unit as it came), and beside them \
            OUT.json describing them: fourcc, pixelFormat (libavutil's name, or the codec), width, \
            height, bytesPerLine (0 when compressed), byteCount, timestampNanoseconds \
            (CLOCK_MONOTONIC), sequence, keyframe (whether the frame decodes on its own). Bayer cameras \
            are read through libv4l2's conversion. --size and --pixel-format ask the camera for a \
            size and format it offers; --quality (1 to 100) sets the JPEG quality.

            BURSTS AND TIME-LAPSE
              --count N takes N photos: the next N frames, or with --interval one every \
            INTERVAL. OUT is then a template: %n is the photo's number (%3n pads it to three \
            digits), strftime fields (%Y%m%d-%H%M%S) take the time of the photo (%c is the \
            camera's number, here 1, not strftime's date and time); without %n the \
            files are OUT, OUT-2, OUT-3 … Files are created new: capctl never overwrites one.

            FLASH
              --flash on fires the camera's V4L2 flash strobe (or its torch, for the frame); auto \
            fires only when the scene is dark (a frame's mean luma below 25 %). on with a camera \
            that has no light fails (status 64); auto then takes the photo without.

            LIVE PHOTOS
              --live also writes a movie of about 3 seconds, 1.5 s before and after the photo, \
            beside it (OUT with .mov, or .mp4 with --live-format mp4); the photo's time in the \
            movie is reported. From an H.264 or HEVC camera the movie starts no earlier than the \
            first keyframe.

            PROGRESS
              On a terminal, one line per photo. With --json, or when stdout is not a terminal, \
            one JSON object a line for each event of each request, in order: willBeginCapture, \
            willCapturePhoto, didCapturePhoto, didFinishProcessingPhoto (path, width, height, \
            bytes, timestamp), didFinishProcessingLivePhotoMovie (path, duration, \
            photoDisplayTime), didFinishCapture (error when it failed), each with uniqueID and the \
            resolved settings (format, width, height, flashFired, passthrough, fourcc); then one \
            finished event (photos, failed).

            Exit status: 0 when every photo was taken; 73 when an output exists or cannot be \
            created (nothing is written); 64 for bad options, sizes or formats the camera does not \
            offer, flash on without a flash; 66/69 for a missing or busy camera; 74 on a write error.
            """
        )

        @Option(name: .long, help: ArgumentHelp("The camera (default video:0).", valueName: "device"))
        var video: DeviceArgument?

        @OptionGroup var capture: VideoCaptureOptions

        @Option(name: .long, help: ArgumentHelp("jpeg, png or raw (default: from OUT's extension).", valueName: "format"))
        var format: PhotoFileFormat?

        @Option(name: .long, help: ArgumentHelp("JPEG quality, 1 to 100.", valueName: "n"))
        var quality: Int?

        @Option(name: .long, help: ArgumentHelp("Let the camera run this long first: a time (0.5, 2s, 300ms) or frames (10f).", valueName: "time|Nf"))
        var warmup = WarmupArgument(argument: "0.5s")!

        @Option(name: .long, help: ArgumentHelp("Number of photos.", valueName: "n"))
        var count = 1

        @Option(name: .long, help: ArgumentHelp("Time between photos of a burst (default 0: consecutive frames).", valueName: "time"))
        var interval = IntervalArgument(argument: "0")!

        @Option(name: .long, help: ArgumentHelp("off, on or auto.", valueName: "mode"))
        var flash: PhotoFlashMode = .off

        @Flag(name: .long, help: "Also write a ~3 s movie around the photo, beside it.")
        var live = false

        @Option(name: .long, help: ArgumentHelp("The live movie's container: mov or mp4.", valueName: "mov|mp4"))
        var liveFormat: LiveFormat = .mov

        @Flag(name: .long, help: "Print the events as JSON, one object a line.")
        var json = false

        @Argument(help: ArgumentHelp("The photo to write, or a template such as 'shot-%3n.jpg'.", valueName: "out"))
        var out: String

        enum LiveFormat: String, ExpressibleByArgument { case mov, mp4 }

        /// The series these options ask for: the settings `POST /photos` fills in too.
        var seriesSettings: CapturePhotoSeries.Settings {
            var settings = CapturePhotoSeries.Settings(destination: out)
            settings.format = format
            settings.quality = quality
            settings.count = count
            settings.interval = interval.time
            settings.flashMode = flash
            settings.livePhotoMovieFileType = live ? (liveFormat == .mp4 ? .mp4 : .quickTimeMovie) : nil
            return settings
        }

        /// What each setting of a series is called here.
        static func optionName(_ setting: CapturePhotoSeries.Settings.Setting) -> String {
            switch setting {
            case .destination: return "OUT"
            case .format: return "--format"
            case .quality: return "--quality"
            case .count: return "--count"
            case .interval: return "--interval"
            case .flashMode: return "--flash"
            case .livePhotoMovieFileType: return "--live-format"
            }
        }

        func validate() throws {
            do throws(CapturePhotoSeries.SettingsError) {
                try seriesSettings.validate()
            } catch {
                throw ValidationError(error.message(naming: Self.optionName))
            }
            try capture.validate()
        }

        func run() throws {
            let status = try SnapFrontend(command: self).run()
            if status != .success { throw ExitCode(status.rawValue) }
        }
    }
}

extension PhotoFileFormat: ExpressibleByArgument {}
extension PhotoFlashMode: ExpressibleByArgument {}

/// `--warmup`: a time (`0`, `0.5`, `2s`, `300ms`) or a frame count (`10f`).
struct WarmupArgument: ExpressibleByArgument, CustomStringConvertible {
    let warmup: PhotoWarmup
    let text: String

    init?(argument: String) {
        let text = argument.trimmingWhitespace()
        if text.lowercased().hasSuffix("f"), let frames = Int(text.dropLast()), frames >= 0 {
            warmup = .frames(frames)
        } else if let zero = Double(text), zero == 0 {
            warmup = .none
        } else if let time = DurationArgument(argument: text) {
            warmup = .duration(time.time)
        } else {
            return nil
        }
        self.text = text
    }

    var description: String { text }

    static var defaultValueDescription: String { "a time (0.5, 2s, 300ms) or a frame count (10f)" }
}

/// `--interval`: zero or a positive time.
package struct IntervalArgument: ExpressibleByArgument, CustomStringConvertible {
    package let time: MediaTime
    let text: String

    package init?(argument: String) {
        let text = argument.trimmingWhitespace()
        if let zero = Double(text), zero == 0 {
            time = .zero
        } else if let positive = DurationArgument(argument: text) {
            time = positive.time
        } else {
            return nil
        }
        self.text = text
    }

    package var description: String { text }

    static var defaultValueDescription: String { "0 or a positive time: 2, 1m, 500ms" }
}
