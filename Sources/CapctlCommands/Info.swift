import ArgumentParser
import CaptureKit
import FoundationEssentials

extension Capctl {
    /// `capctl info FILE`: what a recording holds.
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "info",
            abstract: "Show what a media file holds: container, timing, tracks, edits and metadata.",
            discussion: """
            Reads the whole file once. For the container: its format, size, duration, start time \
            and overall bit rate, its metadata, and for MP4 and QuickTime files the movie time \
            scale, the layout (regular: one index; fragmented: indexed fragment by fragment), \
            whether the index comes before the media data (laid out for network use), the \
            number of complete movie fragments, whether the file is cut short, and whether it \
            was finished: a recording that was killed is left in fragments without its closing \
            index, reads up to its last complete fragment, and 'capctl repair' makes it regular.

            For each track: its codec and profile; for video the frame size, pixel format, frame \
            rate and the number of frames and keyframes that play (frames an edit list leaves out \
            are not counted); for audio the sample rate, channels and the number of samples \
            decoded; its start, duration and bit rate; the flags its container has (MP4 and \
            QuickTime: enabled or disabled; Matroska and WebM: default or not), its alternate \
            group, its language, its title (for a recording, the device it came from: its name \
            and unique ID, one track per camera), and its edit list.

            Then the chapters, in time order, each with its start, end and title: a recording's \
            markers become chapters in MP4, QuickTime, Matroska and WebM (each runs from its \
            marker to the next one, the last to the end of the file).

            A file cut off mid-write is read up to its last complete fragment. A file that is \
            not media, or too damaged to read, fails with status 65.

            With --json, one document with the fields path, format, formatName, size, duration, \
            startTime, bitRate, metadata, movieTimescale, layout (regular or fragmented), \
            fragments, indexBeforeMedia, finished, truncated, tracks (each with title, \
            enabled and default among its fields) and chapters (each with start, end and title; \
            empty when the file has none); times are in seconds, absent values are null.
            """
        )

        @Argument(help: ArgumentHelp("The media file to read.", valueName: "file"), completion: .file())
        var file: String

        @OptionGroup var output: OutputOptions

        func run() throws {
            let info: MediaInfo
            do {
                info = try MediaInfo.read(path: file)
            } catch {
                throw CommandFailure(playback: error)
            }
            if output.json {
                try JSONOutput.printLine(MediaInfoJSON(info))
            } else {
                print(MediaInfoText.render(info))
            }
        }
    }
}

extension CommandFailure {
    /// The status and message for an error reading a file back.
    init(playback error: PlaybackError) {
        switch error {
        case .noSuchFile: self.init(error.description, status: .noInput)
        case .permissionDenied: self.init(error.description, status: .noPermission)
        case .notAFile, .notMedia, .corrupt, .noTrack: self.init(error.description, status: .dataError)
        case .decoderNotFound: self.init(error.description, status: .unavailable)
        case .timeOutOfRange: self.init(error.description, status: .usage)
        case .io: self.init(error.description, status: .ioError)
        case .ffmpeg(_, let underlying):
            self.init(error.description, status: underlying.errno != nil ? .ioError : .dataError)
        }
    }

    /// The status and message for an error writing an output file.
    init(writer error: WriterError) {
        switch error {
        case .outputExists, .directoryMissing, .notWritable, .cannotCreate: self.init(error.description, status: .cannotCreate)
        case .io: self.init(error.description, status: .ioError)
        case .encoderNotFound, .unsupportedFileType, .stream: self.init(error.description, status: .unavailable)
        case .codecNotAllowed, .invalidSettings: self.init(error.description, status: .usage)
        case .invalidState, .malformedOutput: self.init(error.description, status: .software)
        case .damagedSample, .noDecodableStart: self.init(error.description, status: .dataError)
        case .ffmpeg(let underlying): self.init(error.description, status: underlying.errno != nil ? .ioError : .software)
        }
    }
}

/// `info --json`: field names are part of capctl's interface.
struct MediaInfoJSON: Encodable {
    struct Edit: Encodable {
        let duration: Double
        /// Where in the media the edit starts, in seconds; null for an empty edit.
        let mediaTime: Double?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(duration, forKey: .duration)
            try container.encode(mediaTime, forKey: .mediaTime)
        }

        enum CodingKeys: String, CodingKey { case duration, mediaTime }
    }

    struct Chapter: Encodable {
        let start: Double
        let end: Double
        let title: String
    }

    struct Track: Encodable {
        let index: Int
        let type: String
        let codec: String
        let profile: String?
        let width: Int?
        let height: Int?
        let pixelFormat: String?
        let frameRate: Double?
        let sampleRate: Int?
        let channels: Int?
        let channelLayout: String?
        let frames: Int?
        let keyframes: Int?
        let samples: Int64?
        let startTime: Double?
        let duration: Double?
        let bitRate: Int64?
        let enabled: Bool?
        let isDefault: Bool?
        let alternateGroup: Int?
        let language: String?
        let title: String?
        let edits: [Edit]?

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(index, forKey: .index)
            try container.encode(type, forKey: .type)
            try container.encode(codec, forKey: .codec)
            try container.encode(profile, forKey: .profile)
            try container.encode(width, forKey: .width)
            try container.encode(height, forKey: .height)
            try container.encode(pixelFormat, forKey: .pixelFormat)
            try container.encode(frameRate, forKey: .frameRate)
            try container.encode(sampleRate, forKey: .sampleRate)
            try container.encode(channels, forKey: .channels)
            try container.encode(channelLayout, forKey: .channelLayout)
            try container.encode(frames, forKey: .frames)
            try container.encode(keyframes, forKey: .keyframes)
            try container.encode(samples, forKey: .samples)
            try container.encode(startTime, forKey: .startTime)
            try container.encode(duration, forKey: .duration)
            try container.encode(bitRate, forKey: .bitRate)
            try container.encode(enabled, forKey: .enabled)
            try container.encode(isDefault, forKey: .isDefault)
            try container.encode(alternateGroup, forKey: .alternateGroup)
            try container.encode(language, forKey: .language)
            try container.encode(title, forKey: .title)
            try container.encode(edits, forKey: .edits)
        }

        enum CodingKeys: String, CodingKey {
            case index, type, codec, profile, width, height, pixelFormat, frameRate, sampleRate, channels, channelLayout
            case frames, keyframes, samples, startTime, duration, bitRate, enabled, alternateGroup, language, title, edits
            case isDefault = "default"
        }
    }

    let path: String
    let format: String
    let formatName: String
    let size: Int64
    let duration: Double?
    let startTime: Double
    let bitRate: Int64?
    let metadata: [String: String]
    let movieTimescale: Int?
    let layout: String?
    let fragments: Int?
    let indexBeforeMedia: Bool?
    let finished: Bool?
    let truncated: Bool
    let tracks: [Track]
    let chapters: [Chapter]

    init(_ info: MediaInfo) {
        func seconds(_ time: MediaTime?) -> Double? {
            guard let time, time.isNumeric else { return nil }
            return (time.seconds * 1_000_000).rounded() / 1_000_000
        }
        path = info.path
        format = info.formatLongName
        formatName = info.formatName
        size = info.fileSize
        duration = seconds(info.duration)
        startTime = seconds(info.startTime) ?? 0
        bitRate = info.bitRate
        metadata = info.metadata
        movieTimescale = info.movieTimescale
        layout = info.isFragmented.map { $0 ? "fragmented" : "regular" }
        fragments = info.fragmentCount
        indexBeforeMedia = info.indexBeforeMedia
        finished = info.isFinished
        truncated = info.isTruncated
        tracks = info.tracks.map { track in
            Track(index: track.index, type: track.mediaType, codec: track.codec, profile: track.profile, width: track.width,
                  height: track.height, pixelFormat: track.pixelFormat, frameRate: track.frameRate.map { ($0 * 1000).rounded() / 1000 },
                  sampleRate: track.sampleRate, channels: track.channels, channelLayout: track.channelLayout, frames: track.frameCount,
                  keyframes: track.keyframeCount, samples: track.sampleCount, startTime: seconds(track.startTime),
                  duration: seconds(track.duration), bitRate: track.bitRate, enabled: track.isEnabled, isDefault: track.isDefault,
                  alternateGroup: track.alternateGroup, language: track.language, title: track.title,
                  edits: track.edits?.map { Edit(duration: seconds($0.duration) ?? 0, mediaTime: seconds($0.mediaTime)) })
        }
        chapters = info.chapters.map { Chapter(start: seconds($0.start) ?? 0, end: seconds($0.end) ?? 0, title: $0.title) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(format, forKey: .format)
        try container.encode(formatName, forKey: .formatName)
        try container.encode(size, forKey: .size)
        try container.encode(duration, forKey: .duration)
        try container.encode(startTime, forKey: .startTime)
        try container.encode(bitRate, forKey: .bitRate)
        try container.encode(metadata, forKey: .metadata)
        try container.encode(movieTimescale, forKey: .movieTimescale)
        try container.encode(layout, forKey: .layout)
        try container.encode(fragments, forKey: .fragments)
        try container.encode(indexBeforeMedia, forKey: .indexBeforeMedia)
        try container.encode(finished, forKey: .finished)
        try container.encode(truncated, forKey: .truncated)
        try container.encode(tracks, forKey: .tracks)
        try container.encode(chapters, forKey: .chapters)
    }

    enum CodingKeys: String, CodingKey {
        case path, format, formatName, size, duration, startTime, bitRate, metadata, movieTimescale, layout, fragments, indexBeforeMedia
        case finished, truncated, tracks, chapters
    }
}

/// The human-readable form of `info`.
enum MediaInfoText {
    static func render(_ info: MediaInfo) -> String {
        var lines = [info.path]
        var container = "\(info.formatLongName), \(bytes(info.fileSize)), \(seconds(info.duration))"
        if info.startTime != .zero { container += ", starts at \(seconds(info.startTime))" }
        if let rate = info.bitRate { container += ", \(bitRate(rate))" }
        lines.append("  container: \(container)")
        if let scale = info.movieTimescale {
            var layout = "movie time scale \(scale)"
            if let fragmented = info.isFragmented { layout += fragmented ? ", fragmented" : ", regular" }
            if let first = info.indexBeforeMedia { layout += first ? ", index before media" : ", index after media" }
            if let fragments = info.fragmentCount, fragments > 0 { layout += ", \(fragments) fragment\(fragments == 1 ? "" : "s")" }
            lines.append("  layout: \(layout)")
        }
        if info.isTruncated { lines.append("  truncated: the file ends in the middle of a box (read up to its last complete part)") }
        if info.isFinished == false {
            let remedy = info.isFragmented == true ? "; 'capctl repair \(info.path)' makes it a regular file" : ""
            lines.append("  unfinished: the recording did not finish (read up to its last complete fragment)\(remedy)")
        }
        for key in info.metadata.keys.sorted() {
            lines.append("  \(key): \(info.metadata[key]!)")
        }
        for track in info.tracks {
            var parts = ["\(track.mediaType) \(track.codec)\(track.profile.map { " (\($0))" } ?? "")"]
            if let width = track.width, let height = track.height { parts.append("\(width)x\(height)") }
            if let format = track.pixelFormat { parts.append(format) }
            if let rate = track.frameRate { parts.append("\(number(rate)) fps") }
            if let rate = track.sampleRate { parts.append("\(rate) Hz") }
            if let channels = track.channels { parts.append("\(channels) ch\(track.channelLayout.map { " (\($0))" } ?? "")") }
            if track.mediaType == "video", let frames = track.frameCount {
                parts.append("\(frames) frames (\(track.keyframeCount ?? 0) keyframes)")
            }
            if let samples = track.sampleCount { parts.append("\(samples) samples") }
            if let duration = track.duration { parts.append(seconds(duration)) }
            if let start = track.startTime, start != .zero { parts.append("from \(seconds(start))") }
            if let rate = track.bitRate { parts.append(bitRate(rate)) }
            var flags = [String]()
            if let enabled = track.isEnabled { flags.append(enabled ? "enabled" : "disabled") }
            if let isDefault = track.isDefault { flags.append(isDefault ? "default" : "not default") }
            if let group = track.alternateGroup, group != 0 { flags.append("alternate group \(group)") }
            if let language = track.language { flags.append(language) }
            if let title = track.title { flags.append("\"\(title)\"") }
            lines.append("  track \(track.index): " + parts.joined(separator: ", ") + (flags.isEmpty ? "" : "; " + flags.joined(separator: ", ")))
            if let edits = track.edits, !edits.isEmpty {
                var movieTime = MediaTime.zero
                let described = edits.map { edit -> String in
                    let span = "\(number(movieTime.seconds))–\(number((movieTime + edit.duration).seconds)) s"
                    movieTime = movieTime + edit.duration
                    return edit.mediaTime.map { "\(span) plays media from \(number($0.seconds)) s" } ?? "\(span) empty"
                }
                lines.append("    edits: " + described.joined(separator: "; "))
            }
        }
        if !info.chapters.isEmpty { lines.append("  chapters:") }
        for (number, chapter) in info.chapters.enumerated() {
            lines.append("    \(number + 1): \(self.number(chapter.start.seconds))–\(self.number(chapter.end.seconds)) s \"\(chapter.title)\"")
        }
        return lines.joined(separator: "\n")
    }

    static func seconds(_ time: MediaTime) -> String {
        time.isNumeric ? "\(number(time.seconds)) s" : "duration unknown"
    }

    static func bitRate(_ rate: Int64) -> String {
        rate >= 1_000_000 ? "\(number(Double(rate) / 1_000_000)) Mb/s" : "\(number(Double(rate) / 1000)) kb/s"
    }

    static func bytes(_ size: Int64) -> String {
        if size >= 1 << 30 { return "\(number(Double(size) / Double(1 << 30))) GiB" }
        if size >= 1 << 20 { return "\(number(Double(size) / Double(1 << 20))) MiB" }
        if size >= 1 << 10 { return "\(number(Double(size) / 1024)) KiB" }
        return "\(size) bytes"
    }

    /// Up to three decimals, without trailing zeros.
    static func number(_ value: Double) -> String {
        var text = String(cFormat: "%.3f", value)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text == "-0" ? "0" : text
    }
}
