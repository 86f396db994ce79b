import ArgumentParser
import CaptureKit
import FoundationEssentials

extension Capctl {
    /// `capctl frame FILE --at TIME -o OUT`: stills out of a recording.
    struct Frame: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "frame",
            abstract: "Save the frame shown at a time, or one every interval, as PNG, JPEG or PPM.",
            discussion: """
            The frame for a time is the one on screen then: the last frame whose presentation \
            time is at or before it (a time before the first frame gives the first frame). \
            Times are measured from the start of the file's timeline, after its edit list.

            With --at, one image is written to the file -o names. With --every, images are taken \
            at 0, INTERVAL, 2×INTERVAL … up to the end, and -o is a pattern with one number \
            field, such as 'thumb-%04d.png', numbered from 1.

            TIME and INTERVAL are seconds (2.5), mm:ss.fff, hh:mm:ss.fff or with units (1.5s, \
            1m30s, 500ms), as record's times are. The image format \
            follows the output's extension: .png, .jpg/.jpeg or .ppm. --size scales the frame \
            to WIDTHxHEIGHT; without it the frame keeps its own size.

            Outputs are created new: if any of them already exists, nothing is written and the \
            command fails with status 73. A time beyond the end of the file fails with status \
            64; a file without video, or one that is not media, with status 65.

            With --json, one document: {"file", "images": [{"path", "time", "frameTime", \
            "width", "height"}]}, times in seconds.
            """
        )

        @Argument(help: ArgumentHelp("The recording to take frames from.", valueName: "file"), completion: .file())
        var file: String

        @Option(name: .customLong("at"), help: ArgumentHelp("The time of the frame to save.", valueName: "time"),
                transform: DurationArgument.instant)
        var time: DurationArgument?

        @Option(help: ArgumentHelp("Save a frame every INTERVAL, from the start to the end.", valueName: "interval"),
                transform: DurationArgument.instant)
        var every: DurationArgument?

        @Option(name: [.customShort("o"), .customLong("output")],
                help: ArgumentHelp("The image to write, or with --every a pattern such as 'thumb-%04d.png'.", valueName: "out"),
                completion: .file())
        var outputPath: String

        @Option(help: ArgumentHelp("Scale frames to this size, each side up to 16384.", valueName: "WxH"))
        var size: FrameSizeArgument?

        @OptionGroup var output: OutputOptions

        func validate() throws {
            switch (time, every) {
            case (nil, nil): throw ValidationError("give --at TIME for one frame, or --every INTERVAL for a series")
            case (.some, .some): throw ValidationError("--at and --every cannot be used together; choose one")
            default: break
            }
            if let every, every.time <= .zero {
                throw ValidationError("--every must be longer than 0 seconds")
            }
            guard ImageFormat(path: outputPath) != nil else {
                throw ValidationError("cannot tell the image format of '\(outputPath)'; end it in .png, .jpg or .ppm")
            }
            if every != nil, OutputPattern(outputPath) == nil {
                throw ValidationError("with --every, -o needs one number field, as in 'thumb-%04d.png'")
            }
        }

        func run() throws {
            let format = ImageFormat(path: outputPath)!
            let item: PlayerItem
            let videoOutput: PlayerItemVideoOutput
            do {
                item = try PlayerItem(path: file)
                videoOutput = try PlayerItemVideoOutput(item: item, pixelFormat: format.pixelFormat,
                                                        size: size.map { ($0.width, $0.height) })
            } catch {
                throw CommandFailure(playback: error)
            }

            // The times and file names, all known (and checked) before anything is written.
            var requests = [(time: MediaTime, path: String)]()
            let duration = item.duration
            if let time {
                if duration.isNumeric, time.time > duration {
                    throw CommandFailure(playback: .timeOutOfRange(path: file, time: time.time, duration: duration))
                }
                requests.append((time.time, outputPath))
            } else if let every {
                guard duration.isNumeric else {
                    throw CommandFailure("\(file): the file does not state its duration; use --at for single frames", status: .dataError)
                }
                let pattern = OutputPattern(outputPath)!
                var moment = MediaTime.zero
                var number = 1
                while moment < duration || (number == 1 && moment == duration) {
                    requests.append((moment, pattern.path(number)))
                    moment = moment + every.time
                    number += 1
                    guard moment.isNumeric, number <= 1_000_000 else { break }
                }
            }
            for request in requests where FileManager.default.fileExists(atPath: request.path) || isSymbolicLink(request.path) {
                throw CommandFailure(writer: .outputExists(path: request.path))
            }

            var written = [String]()
            var images = [FrameImageJSON]()
            do {
                for request in requests {
                    var shown = MediaTime.invalid
                    var buffer = try videoOutput.copyPixelBuffer(forItemTime: request.time, itemTimeForDisplay: &shown)
                    if buffer == nil, let first = videoOutput.nextFrameTime {
                        buffer = try videoOutput.copyPixelBuffer(forItemTime: first, itemTimeForDisplay: &shown)
                    }
                    guard let buffer else {
                        throw CommandFailure("\(file): no frame could be decoded at \(request.time.seconds) s", status: .dataError)
                    }
                    let bytes = try ImageFile.encode(buffer, as: format)
                    try ImageFile.write(bytes, to: request.path)
                    written.append(request.path)
                    images.append(FrameImageJSON(path: request.path, time: request.time.seconds, frameTime: shown.seconds,
                                                 width: buffer.width, height: buffer.height))
                    if !output.json {
                        print("\(request.path): frame shown at \(MediaInfoText.seconds(shown)) (asked for \(MediaInfoText.seconds(request.time)))")
                    }
                }
            } catch {
                // All or nothing: a series that fails part way leaves no images.
                for path in written { try? FileManager.default.removeItem(atPath: path) }
                switch error {
                case let failure as CommandFailure: throw failure
                case let playback as PlaybackError: throw CommandFailure(playback: playback)
                case let writer as WriterError: throw CommandFailure(writer: writer)
                default: throw error
                }
            }
            if output.json {
                try JSONOutput.printLine(FrameDocumentJSON(file: file, images: images))
            }
        }

        private func isSymbolicLink(_ path: String) -> Bool {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) != nil
        }
    }
}

/// An output name with one printf-style number field (`%d`, `%04d`); `%%` is a percent sign.
struct OutputPattern {
    private let prefix: String
    private let suffix: String
    private let width: Int

    init?(_ pattern: String) {
        var prefix = "", suffix = ""
        var width: Int?
        var index = pattern.startIndex
        while index < pattern.endIndex {
            let character = pattern[index]
            index = pattern.index(after: index)
            guard character == "%" else {
                if width == nil { prefix.append(character) } else { suffix.append(character) }
                continue
            }
            guard index < pattern.endIndex else { return nil }
            if pattern[index] == "%" {
                if width == nil { prefix.append("%") } else { suffix.append("%") }
                index = pattern.index(after: index)
                continue
            }
            var digits = ""
            while index < pattern.endIndex, pattern[index].isASCII, pattern[index].isNumber {
                digits.append(pattern[index])
                index = pattern.index(after: index)
            }
            guard width == nil, index < pattern.endIndex, pattern[index] == "d" else { return nil }
            index = pattern.index(after: index)
            guard let parsed = Int(digits.isEmpty ? "0" : digits), parsed <= 12 else { return nil }
            width = parsed
        }
        guard let width else { return nil }
        self.prefix = prefix
        self.suffix = suffix
        self.width = width
    }

    func path(_ number: Int) -> String {
        let digits = String(number)
        return prefix + String(repeating: "0", count: max(0, width - digits.count)) + digits + suffix
    }
}

struct FrameImageJSON: Encodable {
    let path: String
    let time: Double
    let frameTime: Double
    let width: Int
    let height: Int
}

struct FrameDocumentJSON: Encodable {
    let file: String
    let images: [FrameImageJSON]
}
