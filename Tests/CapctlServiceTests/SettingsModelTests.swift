import ArgumentParser
@testable import capctl_serve
import CapctlCommands
import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// One settings model for the command line and the API: `record`'s options
/// and `POST /recordings`' JSON make the same `RecordingOptions`, checked by
/// the same code, so that a setting refused on one side is refused on the
/// other with the same words, each naming the setting its own way (`--keep-files`
/// and OUT on the command line, `keepFiles` and `file` in JSON). The same
/// holds for `snap` and `POST /photos` (CaptureKit's `CapturePhotoSeries.Settings`).
@Suite struct SettingsModelTests {
    /// record's message for `arguments`, as `capctl record` prints it (without "Error: ").
    private func commandLineMessage(_ arguments: [String]) -> String? {
        do {
            _ = try Capctl.Record.parse(arguments)
            return nil
        } catch {
            let text = Capctl.oneLine(Capctl.Record.message(for: error)) ?? "\(error)"
            return text.hasPrefix("Error: ") ? String(text.dropFirst(7)) : text
        }
    }

    /// The JSON body's refusal, as `POST /recordings` answers it.
    private func serviceMessage(_ body: [String: JSONValue]) -> String? {
        do {
            _ = try StartRecordingRequest(json: body)
            return nil
        } catch {
            return error.message
        }
    }

    /// The command line's message with each setting called by its JSON key.
    private func inJSONNames(_ message: String) -> String {
        var text = message
        // Longest first, so that --max-duration is not read as --max.
        for key in RecordingOptions.Key.allCases.sorted(by: { $0.kebab.count > $1.kebab.count }) where key != .out {
            text = text.replacingOccurrences(of: "--" + key.kebab, with: key.rawValue)
        }
        return text.replacingOccurrences(of: "OUT", with: "file")
    }

    @Test(arguments: [
        (["--keep-files", "0", "r-%n.mp4"], ["file": JSONValue.string("r-%n.mp4"), "keepFiles": .integer(0)], RecordingOptions.Key.keepFiles),
        (["--keep-files", "3", "r.mp4"], ["file": .string("r.mp4"), "keepFiles": .integer(3)], .keepFiles),
        (["--max-size", "1K", "r.mp4"], ["file": .string("r.mp4"), "maxSize": .string("1K")], .maxSize),
        (["--segment-duration", "1s", "r.mp4"], ["file": .string("r.mp4"), "segmentDuration": .string("1s")], .out),
        (["--pre-roll-memory", "10M", "r.mp4"], ["file": .string("r.mp4"), "preRollMemory": .string("10M")], .preRollMemory),
        (["--crf", "20", "--bitrate", "4M", "r.mp4"], ["file": .string("r.mp4"), "crf": .integer(20), "bitrate": .string("4M")], .crf),
        (["--stream-timeout", "2s", "r.mp4"], ["file": .string("r.mp4"), "streamTimeout": .string("2s")], .streamTimeout),
        (["--silence-threshold", "-50", "r.mp4"], ["file": .string("r.mp4"), "silenceThreshold": .integer(-50)], .silenceThreshold),
        (["--timelapse-fps", "5", "r.mp4"], ["file": .string("r.mp4"), "timelapseFps": .integer(5)], .timelapseFps),
        (["--no-fragments", "--fragment-interval", "2s", "r.mp4"], ["file": .string("r.mp4"), "noFragments": .bool(true), "fragmentInterval": .string("2s")], .fragmentInterval),
        (["--metadata", "nokey", "r.mp4"], ["file": .string("r.mp4"), "metadata": .array([.string("nokey")])], .metadata),
        (["--preset", "nope", "r.mp4"], ["file": .string("r.mp4"), "preset": .string("nope")], .preset),
        (["--stream", "ftp://example.org/x"], ["stream": .string("ftp://example.org/x")], .stream),
        (["--max-duration", "10s"], ["maxDuration": .string("10s")], .out),
        (["--faststart", "--stream", "rtmp://127.0.0.1/live/x"], ["faststart": .bool(true), "stream": .string("rtmp://127.0.0.1/live/x")], .faststart),
        (["--timelapse", "10s", "--video-codec", "copy", "r.mp4"], ["file": .string("r.mp4"), "timelapse": .string("10s"), "videoCodec": .string("copy")], .videoCodec),
    ])
    func aRefusedRecordingSaysTheSameOnBothSides(arguments: [String], body: [String: JSONValue], key: RecordingOptions.Key) throws {
        let line = try #require(commandLineMessage(["--video", "test-pattern"] + arguments), "\(arguments) was taken")
        let json = try #require(serviceMessage(body), "\(body) was taken")
        #expect(line.contains(SettingNames.commandLine[key]), "\(line)")
        #expect(json.contains(key == .out ? "file" : key.rawValue) && !json.contains("--"), "\(json)")
        #expect(inJSONNames(line) == json)
    }

    @Test func bothSidesMakeTheSameRecording() throws {
        let command = try Capctl.Record.parse(["--max-duration", "90s", "--segment-duration", "30s", "--keep-files", "4", "--crf", "28",
                                               "--metadata", "title=Door", "--pre-roll", "2s", "--resume-on", "motion:3", "d-%3n.mkv"])
        let request = try StartRecordingRequest(json: ["maxDuration": .integer(90), "segmentDuration": .string("30s"), "keepFiles": .string("4"),
                                                       "crf": .integer(28), "metadata": .object(["title": .string("Door")]), "preRoll": .number(2),
                                                       "resumeOn": .string("motion:3"), "file": .string("d-%3n.mkv")])
        let fromCommand = RecordRequest(options: command.options).recording
        let fromJSON = RecordRequest(options: request.options).recording
        #expect(fromCommand.destination == fromJSON.destination)
        #expect(fromCommand.maxDuration == fromJSON.maxDuration && fromJSON.maxDuration?.seconds == 90)
        #expect(fromCommand.segmentDuration == fromJSON.segmentDuration)
        #expect(fromCommand.retention.maxFiles == 4 && fromJSON.retention.maxFiles == 4)
        #expect(fromCommand.settings.quality == 28 && fromJSON.settings.quality == 28)
        #expect(fromCommand.settings.metadata.map(\.value) == ["Door"] && fromJSON.settings.metadata.map(\.value) == ["Door"])
        #expect(fromCommand.preRoll == fromJSON.preRoll && fromJSON.preRoll?.seconds == 2)
        #expect(fromCommand.motion?.threshold == 3 && fromJSON.motion?.threshold == 3)
    }

    /// `record`'s options (as its own help describes them), the settings
    /// value's properties and its keys are the same names: an option added
    /// to one and not the others fails here.
    @Test func recordsOptionsAndTheSettingsValueAgree() throws {
        let dump = try capctl(["record", "--experimental-dump-help"])
        let help = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let arguments = try #require((help["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        let options = Set(arguments.flatMap { ($0["names"] as? [[String: Any]] ?? []).filter { $0["kind"] as? String == "long" }
            .compactMap { $0["name"] as? String } }).subtracting(["help", "version"])
        let keys = RecordingOptions.Key.allCases.filter { $0 != .out }
        #expect(options == Set(keys.map(\.kebab)), "only in record: \(options.subtracting(keys.map(\.kebab))); only in the settings: \(Set(keys.map(\.kebab)).subtracting(options))")
        let properties = Set(Mirror(reflecting: RecordingOptions()).children.compactMap(\.label))
        #expect(properties == Set(RecordingOptions.Key.allCases.map(\.rawValue)))
    }

    /// Every setting of a recording is taken in JSON, or refused with its reason.
    @Test func everySettingHasItsKey() {
        for key in RecordingOptions.Key.allCases {
            let name = key == .out ? "file" : key.rawValue
            #expect(StartRecordingRequest.keys.contains(name) != (StartRecordingRequest.refused[name] != nil), "\(name)")
        }
        #expect(StartRecordingRequest.keys.count + StartRecordingRequest.refused.count == RecordingOptions.Key.allCases.count + 1)
    }

    @Test func valuesTheCommandLineWouldNotParseAreRefusedByKey() {
        for (body, key) in [(["file": JSONValue.string("r.mp4"), "maxDuration": .string("soon")], "maxDuration"),
                            (["file": .string("r.mp4"), "startPaused": .string("yes")], "startPaused"),
                            (["file": .string("r.mp4"), "keepFiles": .number(1.5)], "keepFiles"),
                            (["file": .string("r.mp4"), "stream": .array([.integer(1)])], "stream")] {
            let message = serviceMessage(body)
            #expect(message?.hasPrefix(key) == true, "\(body): \(message ?? "taken")")
        }
    }

    @Test(arguments: [
        (["--quality", "0", "x.jpg"], ["quality": JSONValue.integer(0), "file": .string("x.jpg")], "quality"),
        (["--interval", "1", "x.jpg"], ["interval": .integer(1), "file": .string("x.jpg")], "interval"),
        (["--quality", "50", "x.png"], ["quality": .integer(50), "file": .string("x.png")], "quality"),
        (["x.gif"], ["file": .string("x.gif")], "format"),
    ])
    func aRefusedPhotoSaysTheSameOnBothSides(arguments: [String], body: [String: JSONValue], key: String) throws {
        var line: String
        do {
            _ = try Capctl.parseAsRoot(["snap"] + arguments)
            Issue.record("\(arguments) was taken")
            return
        } catch {
            line = Capctl.oneLine(Capctl.message(for: error)) ?? ""
            if line.hasPrefix("Error: ") { line = String(line.dropFirst(7)) }
        }
        let json: String
        do {
            _ = try PhotoRequest(json: body)
            Issue.record("\(body) was taken")
            return
        } catch {
            json = error.message
        }
        #expect(!json.contains("--") && json.contains(key), "\(json)")
        #expect(line.contains("--" + key), "\(line)")
        // The same words; only the names differ.
        #expect(line.replacingOccurrences(of: "--", with: "") == json, "\(line) | \(json)")
    }
}
