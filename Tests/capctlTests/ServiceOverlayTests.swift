import Foundation
import Testing

/// The service's overlay is its cameras': started with --overlay, every view
/// of the camera shows it, and a recording cannot ask for its own.
struct ServiceOverlayTests {
    @Test func overlayIsTheCamerasAndRefusedPerRecording() throws {
        let service = try ServiceFixture(["--video", "test-pattern,size=640x480", "--overlay", "%H:%M:%S"])
        for body in [#"{"file": "x.mp4", "overlay": "%T"}"#, #"{"file": "x.mp4", "overlayPosition": "top-right"}"#] {
            let reply = try service.request("POST", "/recordings", json: body)
            #expect(reply.status == 400, "\(body) → \(reply.status) \(reply.text)")
            #expect((reply.json["error"] as? String)?.contains("start the service with --overlay TEXT") == true, "\(reply.text)")
        }
        #expect(service.files.isEmpty)
        // The live view's picture has the dark box where the test pattern is white (its left edge).
        let snapshot = try service.request("GET", "/snapshot.jpg")
        #expect(snapshot.status == 200)
        let jpeg = service.folder + "/../overlay-snapshot-\(service.port).jpg"
        try snapshot.body.write(to: URL(fileURLWithPath: jpeg))
        defer { try? FileManager.default.removeItem(atPath: jpeg) }
        let gray = try OverlayCommandTests.toolData("/usr/bin/ffmpeg", ["-v", "error", "-nostdin", "-i", jpeg, "-vf", "scale=640:480,format=gray",
                                                                   "-f", "rawvideo", "-"])
        let pixels = [UInt8](gray)
        let inBox = Int(pixels[10 * 640 + 8]), belowBox = Int(pixels[100 * 640 + 8])
        #expect(inBox < 60 && belowBox > 190, "box \(inBox), pattern \(belowBox)")
        #expect(service.stop() == 0)
    }
}
