import Foundation
import Glibc

/// A TCP or UDP port on 127.0.0.1 that nothing listens on right now.
func freeLoopbackPort(udp: Bool = false) throws -> Int {
    let socketFD = socket(AF_INET, Int32(udp ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue), 0)
    guard socketFD >= 0 else { throw ServerFailure(message: "socket: \(String(cString: strerror(errno)))") }
    defer { close(socketFD) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard bound == 0 else { throw ServerFailure(message: "bind: \(String(cString: strerror(errno)))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct ServerFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Waits (at most `seconds`) until a TCP socket listens on 127.0.0.1:`port`.
/// It reads the kernel's socket table rather than connecting: a server in
/// listen mode (ffmpeg's RTSP) would take a test connection for its client.
func waitForListener(port: Int, seconds: Double = 10) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    let local = String(format: "0100007F:%04X", port)
    while Date() < deadline {
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        // Columns: sl, local_address, rem_address, st (0A: LISTEN), …
        let listening = table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[1] == local && fields[3] == "0A"
        }
        if listening { return true }
        usleep(50_000)
    }
    return false
}

/// Waits (at most `seconds`) until a UDP socket is bound to 127.0.0.1:`port` (or to any address).
func waitForUDPSocket(port: Int, seconds: Double = 30) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    let suffix = String(format: ":%04X", port)
    while Date() < deadline {
        let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
        let bound = table.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 1 && fields[1].hasSuffix(suffix)
        }
        if bound { return true }
        usleep(50_000)
    }
    return false
}

/// nginx with Debian's RTMP module on 127.0.0.1, with a configuration of its
/// own: `live on; record all` into `recordings`, so what it received can be
/// read back. Stopped (and startable again on the same port) by the test.
final class RTMPServer {
    let port: Int
    let directory: URL
    let recordings: URL
    private var process: Process?

    init(directory: URL) throws {
        port = try freeLoopbackPort()
        self.directory = directory
        recordings = directory.appendingPathComponent("recordings")
        try FileManager.default.createDirectory(at: recordings, withIntermediateDirectories: true)
        let configuration = """
        load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
        user root;
        daemon off;
        master_process off;
        pid \(directory.path)/nginx.pid;
        error_log \(directory.path)/error.log;
        events {}
        rtmp {
            server {
                listen 127.0.0.1:\(port);
                application live { live on; record all; record_path \(recordings.path); record_unique off; }
            }
        }
        """
        try configuration.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
    }

    var url: String { "rtmp://127.0.0.1:\(port)/live/cam" }
    /// What the server recorded of the stream `cam`.
    var recorded: String { recordings.appendingPathComponent("cam.flv").path }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", directory.appendingPathComponent("nginx.conf").path, "-p", directory.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        guard waitForListener(port: port) else {
            let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
            throw ServerFailure(message: "nginx did not listen on \(port): \(log)")
        }
    }

    /// Stops the server at once, as a crash would: connections drop, and
    /// what the kernel still held for it is lost. With `afterRecordingSettles`,
    /// first waits (at most 10 s) until its recording has stopped growing for
    /// half a second, so that it has read everything a finished client sent.
    func stop(afterRecordingSettles: Bool = false) {
        guard let process, process.isRunning else { return }
        if afterRecordingSettles {
            var last: Int64 = -1
            var steadySince = Date()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let size = ((try? FileManager.default.attributesOfItem(atPath: recorded))?[.size] as? NSNumber)?.int64Value ?? -1
                if size != last { last = size; steadySince = Date() } else if Date().timeIntervalSince(steadySince) >= 0.5 { break }
                usleep(50_000)
            }
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    deinit { stop() }
}

/// ffmpeg as the receiving end of a stream (an SRT listener, an RTSP server
/// in listen mode, a UDP reader), copying what it receives into a file.
final class FFmpegReceiver {
    let output: String
    private let process = Process()

    /// `input` is ffmpeg's input URL (`srt://127.0.0.1:P?mode=listener`);
    /// `inputOptions` go before it. Ends by itself `timeout` seconds after starting at the latest.
    init(input: String, inputOptions: [String] = [], output: String, timeout: Int = 40) throws {
        self.output = output
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["-s", "INT", String(timeout), "ffmpeg", "-v", "error", "-nostdin", "-y"] + inputOptions
            + ["-i", input, "-c", "copy", output]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// Waits (at most `seconds`) for ffmpeg to end, as it does when the stream ends.
    @discardableResult
    func waitForEnd(seconds: Double = 15) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(50_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGINT)
            process.waitUntilExit()
            return false
        }
        return true
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// A TCP listener on 127.0.0.1 that never answers: connections complete in
/// the kernel's backlog, and whatever a client sends goes unread.
final class SilentServer {
    let port: Int
    private let socketFD: Int32

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw ServerFailure(message: "silent server: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        socketFD = listener
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socketFD) }
}

/// Whether ffmpeg decodes every packet of a file without an error.
func decodesCleanly(_ path: String) throws -> Bool {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-f", "null", "-"]
    let err = Pipe()
    process.standardError = err
    process.standardOutput = FileHandle.nullDevice
    try process.run()
    let data = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return process.terminationStatus == 0 && data.isEmpty
}
