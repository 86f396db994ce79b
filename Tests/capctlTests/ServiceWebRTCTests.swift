import Foundation
import Testing

/// WHEP in `capctl serve`, played by real players on 127.0.0.1:
/// Tests/Service/whep_check.py drives Debian's headless Chromium (video
/// decoded and audio samples received, two viewers at once, DELETE, a browser
/// that closes without DELETE, and the refusals), and the service's side is
/// checked here: its `viewer-joined` and `viewer-left` events.
@Suite(.serialized) struct ServiceWebRTCTests {
    static let root = ServicePageTests.root

    @Test func chromiumPlaysCamerasOverWHEPWithSoundAndTheRefusalsComeFirst() throws {
        let scratch = try ServicePageTests.Scratch()
        let token = "whep-" + UUID().uuidString.lowercased()
        let tokenFile = scratch.path + "/token"
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8),
                                               attributes: [.posixPermissions: 0o600]))
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone", "--token-file", tokenFile])
        let run = try ServicePageTests.runScript("whep_check.py", ["--url", service.url, "--token", token, "--camera", "0", "--microphone", "1",
                                                 "--viewers", "2"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(run.failures.isEmpty)
        // The service's side: two viewers joined, with camera 0 and microphone 1, and both left:
        // one deleted, one ended by the service when the browser closed it.
        let joined = service.events.filter { $0["event"] as? String == "viewer-joined" }
        #expect(joined.count == 2 && joined.allSatisfy { $0["camera"] as? String == "0" && $0["microphone"] as? String == "1" },
                "\(joined)")
        let left = service.waitForEvent(timeout: 30) { _ in
            service.events.filter { $0["event"] as? String == "viewer-left" }.count == 2
        }
        #expect(left != nil)
        let reasons = Set(service.events.filter { $0["event"] as? String == "viewer-left" }.compactMap { $0["reason"] as? String })
        #expect(reasons.contains("deleted") && reasons.count == 2, "\(reasons)")
        for event in service.events where event["event"] as? String == "viewer-left" {
            #expect((event["bytesSent"] as? Int ?? 0) > 0, "\(event)")
        }
        #expect(service.stop() == 0)
    }

    /// A second player that no one here wrote: aiortc (its own ICE, DTLS, SRTP and RTP, and
    /// FFmpeg's decoders through PyAV), from PyPI in .venv-test/ (scripts/setup). Its RTCP
    /// sender reports put audio and video on one timeline: the capture clock's (with RTP
    /// timestamps on it, CAPCTL_WEBRTC_RTP_CLOCK=capture, the script can tell).
    @Test func aiortcPlaysTheCameraAndTheMicrophoneInStep() throws {
        let python = Self.root.appendingPathComponent(".venv-test/bin/python").path
        try #require(FileManager.default.isExecutableFile(atPath: python), "no .venv-test: run scripts/setup")
        let service = try ServiceFixture(["--video", "test-pattern", "--audio", "test-tone"],
                                         environment: ["CAPCTL_WEBRTC_RTP_CLOCK": "capture"])
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.root.appendingPathComponent("Tests/Service/whep_aiortc.py").path, "--url", service.url,
                             "--width", "640", "--height", "480", "--capture-clock"]
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print(text.split(separator: "\n").map { "whep_aiortc.py: \($0)" }.joined(separator: "\n"))
        #expect(process.terminationStatus == 0 && !text.contains("FAIL "), "\(text.suffix(2000))")
        let left = service.waitForEvent(timeout: 10) { $0["event"] as? String == "viewer-left" }
        #expect(left?["reason"] as? String == "deleted", "\(String(describing: left))")
        #expect(service.stop() == 0)
    }

    @Test func aCameraWithoutAMicrophonePlaysItsVideoAlone() throws {
        // The offer asks for audio too; the answer leaves it inactive, and the video still plays.
        let service = try ServiceFixture(["--video", "test-pattern"])
        let run = try ServicePageTests.runScript("whep_check.py", ["--url", service.url, "--camera", "0", "--no-audio"])
        #expect(run.status == 0, "\(run.summary)")
        #expect(run.failures.isEmpty)
        #expect(service.stop() == 0)
    }

    /// POSTs `sdp` as application/sdp with curl: the status and the body.
    static func postOffer(_ url: String, _ sdp: String) throws -> (status: Int, body: String) {
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s", "--max-time", "30", "-H", "Content-Type: application/sdp", "--data-binary", sdp,
                             "-w", "\n%{http_code}", url]
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    @Test func anOfferWithoutH264OrWithWebRTCOffIsRefusedInOneLine() throws {
        // A browser that offers only VP8: said so, before any peer starts.
        let vp8 = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n"
            + "a=mid:0\r\na=recvonly\r\na=rtpmap:96 VP8/90000\r\n"
        let service = try ServiceFixture(["--video", "test-pattern"])
        let refused = try Self.postOffer(service.url + "/devices/0/whep", vp8)
        #expect(refused.status == 400 && refused.body.contains("H.264"), "\(refused)")
        #expect(service.events.allSatisfy { $0["event"] as? String != "viewer-joined" })
        #expect(service.stop() == 0)

        let off = try ServiceFixture(["--video", "test-pattern", "--no-webrtc"])
        let unavailable = try Self.postOffer(off.url + "/devices/0/whep", vp8)
        #expect(unavailable.status == 503 && unavailable.body.contains("--no-webrtc") && unavailable.body.contains("stream.mjpg"),
                "\(unavailable)")
        #expect(off.stop() == 0)
    }

    /// An offer with H.264, as a player that never connects sends it (valid SDP, no one behind it).
    static let silentOffer = [
        "v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
        "a=fingerprint:sha-256 " + (0..<32).map { _ in "AB" }.joined(separator: ":"),
        "m=video 9 UDP/TLS/RTP/SAVPF 102", "c=IN IP4 0.0.0.0", "a=mid:0", "a=ice-ufrag:abcd",
        "a=ice-pwd:abcdefghijklmnopqrstuvwx", "a=setup:actpass", "a=rtcp-mux", "a=recvonly",
        "a=rtpmap:102 H264/90000", "a=fmtp:102 packetization-mode=1;profile-level-id=42e01f",
    ].joined(separator: "\r\n") + "\r\n"

    @Test func mediaLeavesFromTheListeningAddressInThePortRangeAndAViewerThatNeverConnectsIsEnded() throws {
        let service = try ServiceFixture(["--video", "test-pattern", "--webrtc-ports", "41000-41009"])
        let answer = try Self.postOffer(service.url + "/devices/0/whep", Self.silentOffer)
        #expect(answer.status == 201, "\(answer)")
        let candidates = answer.body.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("a=candidate:") }
        #expect(!candidates.isEmpty, "\(answer.body)")
        for candidate in candidates {
            let fields = candidate.split(separator: " ")
            // a=candidate:FOUNDATION COMPONENT TRANSPORT PRIORITY ADDRESS PORT typ TYPE
            #expect(fields.count >= 8 && fields[4] == "127.0.0.1" && (41000...41009).contains(Int(fields[5]) ?? 0),
                    "only the listening address, in --webrtc-ports: \(candidate)")
        }
        #expect(answer.body.contains("a=sendonly") && answer.body.contains("H264/90000"), "\(answer.body)")
        // The service's own UDP sockets: on 127.0.0.1 alone (no SSDP multicast, no other address).
        let sockets = Self.udpSockets(of: service.pid)
        #expect(!sockets.isEmpty && sockets.allSatisfy { $0.hasPrefix("0100007F:") }, "\(sockets)")
        #expect(!sockets.contains { $0.hasSuffix(":076C") }, "no UPnP (SSDP, port 1900): \(sockets)")
        // No one connects: the service ends the viewer after 15 s, not before, and says why.
        let asked = Date()
        let left = service.waitForEvent(timeout: 40) { $0["event"] as? String == "viewer-left" }
        #expect(left?["reason"] as? String == "no-connection", "\(String(describing: left))")
        #expect(Date().timeIntervalSince(asked) >= 14, "ended after \(Date().timeIntervalSince(asked)) s")
        #expect(service.stop() == 0)
    }

    /// The local addresses (hex, as /proc/net/udp and udp6 write them) of the UDP sockets `pid` holds.
    static func udpSockets(of pid: Int32) -> [String] {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst(8).dropLast())
        })
        var addresses: [String] = []
        for table in ["/proc/net/udp", "/proc/net/udp6"] {
            let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                if fields.count > 9, inodes.contains(String(fields[9])) { addresses.append(String(fields[1])) }
            }
        }
        return addresses
    }

    @Test func badWebRTCOptionsSayWhatToGive() throws {
        for (arguments, expected) in [
            (["--webrtc-ports", "5000"], "--webrtc-ports"),
            (["--webrtc-ports", "41010-41000"], "--webrtc-ports"),
            (["--stun-server", "example.org:3478"], "stun://HOST:PORT"),
            (["--turn-server", "turn://example.org:3478"], "turn://USER:PASSWORD@HOST:PORT"),
        ] {
            let run = try CapctlRun.run(["serve", "--video", "test-pattern"] + arguments)
            #expect(run.status == 64 && run.stderr.contains(expected), "\(arguments): \(run.status) \(run.stderr)")
        }
    }
}
