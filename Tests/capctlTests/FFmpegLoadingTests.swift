import Foundation
import Glibc
import Testing

/// Commands that read or write no media file start without FFmpeg's
/// libraries (the executable does not link them; CFFmpegLoader loads them on
/// the first FFmpeg call), and commands that do, load them.
struct FFmpegLoadingTests {
    /// The dynamic loader's account of one run (`LD_DEBUG=libs`): every
    /// library it looked for and loaded, at start and by dlopen.
    static func loaderLog(_ arguments: [String]) throws -> (run: CapctlRun, log: String) {
        let scratch = try RecordScratch()
        let run = try CapctlRun.run(arguments, environment: ["LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": scratch.file("ld")],
                                    in: scratch.url)
        // The loader writes ld.PID.
        let log = try scratch.contents.filter { $0.hasPrefix("ld.") }
            .map { try String(contentsOfFile: scratch.file($0), encoding: .utf8) }.joined()
        return (run, log)
    }

    /// The shared objects a running process has mapped.
    static func mappedFiles(of process: Process) throws -> [String] {
        // Read to the end: procfs files state no size, which reading by size would take as empty.
        let file = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/\(process.processIdentifier)/maps"))
        defer { try? file.close() }
        let maps = String(decoding: try file.readToEnd() ?? Data(), as: UTF8.self)
        return maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(5).first.map(String.init)
        }
    }

    static let ffmpegLibraries = ["libavformat.so", "libavcodec.so", "libavutil.so", "libswscale.so", "libswresample.so"]

    @Test(arguments: [
        ["list-devices"], ["list-devices", "--json"], ["formats", "test-pattern"], ["formats", "test-tone", "--json"],
        ["controls", "test-pattern"], ["set", "test-pattern", "brightness=1"], ["set-torch", "--status"],
        ["--help"], ["--version"], ["help", "record"],
    ])
    func aProbeCommandDoesNotLoadFFmpeg(arguments: [String]) throws {
        let (_, log) = try Self.loaderLog(arguments)
        // The log is there (the loader did report), and names libc like any run does.
        #expect(log.contains("libc.so.6"))
        for library in Self.ffmpegLibraries {
            #expect(!log.contains(library), "\(arguments.joined(separator: " ")) loaded \(library)")
        }
    }

    /// capctl links FoundationEssentials only: all of Foundation, with ICU,
    /// nearly doubles what a probe command's start maps (see DESIGN.md). One
    /// `import Foundation` in capctl or CaptureKit would bring it back.
    @Test func capctlLinksNoFoundationBeyondItsEssentials() throws {
        let (run, log) = try Self.loaderLog(["list-devices"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(log.contains("libFoundationEssentials.so"), "the log names what is linked")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so"] {
            #expect(!log.contains(library), "capctl loaded \(library)")
        }
    }

    @Test func aRecordingLoadsFFmpegWhenItStarts() throws {
        let (run, log) = try Self.loaderLog(["record", "--video", "test-pattern", "--max-duration", "0.2", "out.mp4"])
        #expect(run.status == 0, "\(run.stderr)")
        for library in Self.ffmpegLibraries {
            #expect(log.contains(library), "record did not load \(library)")
        }
    }

    @Test func aRunningMonitorHasNoFFmpegMapped() throws {
        let process = Process()
        process.executableURL = CapctlRun.binary
        process.arguments = ["monitor", "--json"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        // Its first line says it is watching: it is past its start.
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        #expect(String(decoding: first, as: UTF8.self).contains("\"monitoring\""))
        let mapped = try Self.mappedFiles(of: process)
        // What it does link is there: the list is read right.
        #expect(mapped.contains { $0.contains("/libasound.so") })
        for library in Self.ffmpegLibraries {
            #expect(!mapped.contains { $0.contains(library) }, "monitor has \(library) mapped")
        }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func aRunningRecordingHasFFmpegMapped() throws {
        let scratch = try RecordScratch()
        let recorder = try RunningRecorder(["--video", "test-pattern", "--max-duration", "30", "out.mp4"], in: scratch.url)
        try recorder.waitFor { $0["event"] as? String == "progress" }
        let mapped = try Self.mappedFiles(of: recorder.process)
        recorder.signal(SIGINT)
        #expect(recorder.finish() == 0)
        for library in Self.ffmpegLibraries {
            #expect(mapped.contains { $0.contains(library) }, "a recording has no \(library) mapped")
        }
    }
}
