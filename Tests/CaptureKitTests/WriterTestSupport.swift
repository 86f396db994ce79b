import Foundation
import Testing
@testable import CaptureKit

/// A directory under the system's temporary directory, removed with everything in it when released.
final class WriterScratchDirectory {
    let path: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/capctl-writer-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
        path = String(cString: made)
    }

    func file(_ name: String) -> String { path + "/" + name }

    /// Set CAPCTL_KEEP_TEST_FILES to keep the files for a look afterwards.
    deinit {
        if ProcessInfo.processInfo.environment["CAPCTL_KEEP_TEST_FILES"] == nil {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}

/// Runs ffprobe and returns its JSON output.
enum FFprobe {
    static func run(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffprobe", "-v", "error"] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    static func json(_ arguments: [String]) throws -> [String: Any] {
        let result = try run(["-of", "json"] + arguments)
        let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
        return object as? [String: Any] ?? [:]
    }

    /// The decoded frames of one stream: presentation times and keyframe flags.
    static func frames(_ path: String, stream: String = "v:0") throws -> [(time: Double, key: Bool)] {
        let object = try json(["-select_streams", stream, "-show_entries", "frame=pts_time,best_effort_timestamp_time,key_frame", path])
        let frames = object["frames"] as? [[String: Any]] ?? []
        return frames.map { frame in
            let time = (frame["pts_time"] as? String ?? frame["best_effort_timestamp_time"] as? String).flatMap(Double.init) ?? .nan
            return (time, (frame["key_frame"] as? Int) == 1)
        }
    }

    /// The streams as ffprobe sees them.
    static func streams(_ path: String) throws -> [[String: Any]] {
        try json(["-show_streams", "-count_frames", path])["streams"] as? [[String: Any]] ?? []
    }

    static func format(_ path: String) throws -> [String: Any] {
        try json(["-show_format", path])["format"] as? [String: Any] ?? [:]
    }
}

/// Frames whose picture says which frame they are: the frame number's 12
/// low bits as bars across the top half (white for 1, black for 0), wide
/// enough to survive compression.
enum NumberedFrames {
    static let bits = 12

    static func make(_ number: Int, width: Int = 320, height: Int = 240, format: PixelFormat = .yuv420p) throws -> PixelBuffer {
        let gray = try PixelBuffer(width: width, height: height, pixelFormat: .gray8)
        let stride = gray.bytesPerRow(plane: 0)
        gray.withUnsafeMutableBytes(plane: 0) { bytes in
            for y in 0..<height {
                for x in 0..<width {
                    var value: UInt8 = 128
                    if y < height / 2 {
                        let bit = x * bits / width
                        value = (number >> bit) & 1 == 1 ? 235 : 16
                    }
                    bytes[y * stride + x] = value
                }
            }
        }
        if format == .gray8 { return gray }
        return try convert(gray, to: format)
    }

    /// Reads the number back from an image in gray8, rgb24 or a YUV format (luma plane).
    static func read(_ buffer: PixelBuffer) -> Int {
        let stride = buffer.bytesPerRow(plane: 0)
        let step = buffer.pixelFormat == .rgb24 ? 3 : (buffer.pixelFormat == .rgba || buffer.pixelFormat == .bgra ? 4 : 1)
        return buffer.withUnsafeBytes(plane: 0) { bytes in
            var number = 0
            let y = buffer.height / 4
            for bit in 0..<bits {
                let x = (2 * bit + 1) * buffer.width / (2 * bits)
                if bytes[y * stride + x * step] > 128 { number |= 1 << bit }
            }
            return number
        }
    }

    /// The same picture in another format, through a one-frame conversion.
    static func convert(_ buffer: PixelBuffer, to format: PixelFormat) throws -> PixelBuffer {
        let converter = try PixelConverter(pixelFormat: format, width: buffer.width, height: buffer.height)
        return try converter.convert(buffer)
    }
}

/// Sine tone samples, interleaved s16.
enum Tone {
    static func samples(count: Int, channels: Int, rate: Int, start: Int = 0) -> [Int16] {
        var out = [Int16](repeating: 0, count: count * channels)
        for index in 0..<count {
            let value = Int16(8000 * sin(2 * Double.pi * 440 * Double(start + index) / Double(rate)))
            for channel in 0..<channels { out[index * channels + channel] = value }
        }
        return out
    }
}

func seconds(_ value: Int64, _ scale: Int32) -> MediaTime { MediaTime(value: value, timescale: scale) }

/// Whether every track's media, read without its edit list, runs on
/// without a gap and without a step back: decode times increase, and no step
/// between two samples is longer than twice the track's usual (median)
/// step. A pause left in the media as a gap, for readers to skip through
/// an edit list, fails it.
func mediaRunsOn(_ path: String) throws -> Bool {
    let object = try FFprobe.json(["-ignore_editlist", "1", "-show_entries", "packet=stream_index,dts", path])
    let packets = object["packets"] as? [[String: Any]] ?? []
    var decodeTimes = [Int: [Int64]]()
    for packet in packets {
        guard let stream = packet["stream_index"] as? Int, let dts = packet["dts"] as? Int else { return false }
        decodeTimes[stream, default: []].append(Int64(dts))
    }
    guard !decodeTimes.isEmpty else { return false }
    for times in decodeTimes.values where times.count > 2 {
        let steps = zip(times.dropFirst(), times).map { $0 - $1 }
        guard steps.allSatisfy({ $0 > 0 }) else { return false }
        let usual = steps.sorted()[steps.count / 2]
        guard steps.allSatisfy({ $0 <= 2 * usual }) else { return false }
    }
    return true
}
