import ArgumentParser
import CaptureKit

extension Capctl {
    /// `capctl repair FILE`: a recording that never finished, made a regular MP4/MOV in place.
    struct Repair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "repair",
            abstract: "Make an MP4 or MOV recording that was cut off (killed, power lost) a regular file, in place.",
            discussion: """
            An MP4 or MOV recording is written in fragments, and when it finishes cleanly it \
            becomes a regular file: one index with every sample. A recording that did not finish \
            (killed, power lost, disk full) stays in fragments: players read it up to its last \
            complete fragment, walking every fragment to learn its length, and some read it badly. \
            'capctl info' tells such a file apart (unfinished). repair does to it what a clean \
            finish does: it writes the complete index after the media and turns the fragment \
            headers into unused bytes of one media data box, without copying the media. The \
            samples kept are those of every complete fragment and, of a fragment cut short, those \
            whose bytes are all there; what follows them is cut off. Pauses of a capctl recording \
            are left out as a clean finish leaves them out (capctl keeps its sessions in the \
            file); a file from another program keeps each track's start as its fragments state it. \
            The markers placed while it recorded (capctl keeps them in the file too) become its \
            chapters, as a clean finish makes them, save those past the media that was saved.

            A regular file is left as it is (status 0). A file a recording is still writing is \
            refused (69), as is one that is not MP4 or MOV, or that holds nothing to rebuild an \
            index from: one written in one piece (--no-fragments, --faststart) and cut off before \
            its index, or one cut off before its first fragment (65). The file must be writable \
            (77); a failed write leaves it readable as it was (74).

            With --json, one document: {"path", "outcome" (repaired, already-regular), \
            "duration", "fragments", "sessions", "chapters", "indexBytes", "droppedBytes", "size", \
            "tracks": [{"trackID", "type", "samples", "duration"}]}; times in seconds, \
            "sessions" null for a file without capctl's session record; "chapters" the number of \
            chapters the repaired file carries.
            """
        )

        @Argument(help: ArgumentHelp("The MP4 or MOV file to repair in place.", valueName: "file"), completion: .file())
        var file: String

        @OptionGroup var output: OutputOptions

        func run() throws {
            let result: MovieRepair.Result
            do {
                result = try MovieRepair.repair(path: file)
            } catch {
                throw CommandFailure(repair: error)
            }
            if output.json {
                try JSONOutput.printLine(RepairJSON(result))
            } else {
                print(RepairText.render(result))
            }
        }
    }
}

extension CommandFailure {
    /// The status and message for a file that could not be repaired.
    init(repair error: MovieRepairError) {
        switch error {
        case .noSuchFile: self.init(error.description, status: .noInput)
        case .permissionDenied: self.init(error.description, status: .noPermission)
        case .notAFile, .notAMovie, .cannotRepair: self.init(error.description, status: .dataError)
        case .inUse: self.init(error.description, status: .unavailable)
        case .io: self.init(error.description, status: .ioError)
        }
    }
}

/// `repair --json`: field names are part of capctl's interface.
struct RepairJSON: Encodable {
    struct Track: Encodable {
        let trackID: UInt32
        let type: String
        let samples: Int
        let duration: Double
    }

    let path: String
    let outcome: String
    let duration: Double
    let fragments: Int
    let sessions: Int?
    let chapters: Int
    let indexBytes: Int
    let droppedBytes: Int64
    let size: Int64
    let tracks: [Track]

    init(_ result: MovieRepair.Result) {
        func seconds(_ time: MediaTime) -> Double { time.isNumeric ? (time.seconds * 1_000_000).rounded() / 1_000_000 : 0 }
        path = result.path
        outcome = result.outcome.rawValue
        duration = seconds(result.duration)
        fragments = result.fragments
        sessions = result.sessions
        chapters = result.chapters.count
        indexBytes = result.indexBytes
        droppedBytes = result.droppedBytes
        size = result.fileSize
        tracks = result.tracks.map { Track(trackID: $0.trackID, type: $0.mediaType, samples: $0.samples, duration: seconds($0.duration)) }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(outcome, forKey: .outcome)
        try container.encode(duration, forKey: .duration)
        try container.encode(fragments, forKey: .fragments)
        try container.encode(sessions, forKey: .sessions)
        try container.encode(chapters, forKey: .chapters)
        try container.encode(indexBytes, forKey: .indexBytes)
        try container.encode(droppedBytes, forKey: .droppedBytes)
        try container.encode(size, forKey: .size)
        try container.encode(tracks, forKey: .tracks)
    }

    enum CodingKeys: String, CodingKey {
        case path, outcome, duration, fragments, sessions, chapters, indexBytes, droppedBytes, size, tracks
    }
}

/// The human-readable form of `repair`.
enum RepairText {
    static func render(_ result: MovieRepair.Result) -> String {
        let duration = MediaInfoText.seconds(result.duration)
        let tracks = result.tracks.map { "\($0.mediaType) \($0.samples) sample\($0.samples == 1 ? "" : "s")" }.joined(separator: ", ")
        switch result.outcome {
        case .alreadyRegular:
            return "\(result.path): already a regular file (\(duration); \(tracks)); nothing to repair"
        case .repaired:
            var lines = ["\(result.path): repaired: a regular file now, \(duration)"]
            lines.append("  from \(result.fragments) fragment\(result.fragments == 1 ? "" : "s"): \(tracks)")
            var written = "  index of \(MediaInfoText.bytes(Int64(result.indexBytes))) written after the media, none of it copied"
            if result.droppedBytes > 0 { written += "; \(MediaInfoText.bytes(result.droppedBytes)) after the last whole sample cut off" }
            lines.append(written)
            if let sessions = result.sessions, sessions > 1 {
                lines.append("  \(sessions) recording sessions laid end to end (the pauses between them left out)")
            }
            if !result.chapters.isEmpty {
                lines.append("  \(result.chapters.count) chapter\(result.chapters.count == 1 ? "" : "s") from the recording's markers")
            }
            return lines.joined(separator: "\n")
        }
    }
}
