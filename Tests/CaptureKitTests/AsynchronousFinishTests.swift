import Foundation
import Synchronization
import Testing
@testable import CaptureKit

/// `finishWriting(completionHandler:)` and `await finishWriting()`, as
/// AVAssetWriter offers: the file is complete when the handler runs.
@Suite struct AsynchronousFinishTests {
    static func writtenClip(_ path: String) throws -> AssetWriter {
        let (writer, input) = try WriterTests.h264Writer(path)
        try writer.startWriting()
        try writer.startSession(atSourceTime: .zero)
        try WriterTests.appendFrames(input, 0..<15)
        return writer
    }

    @Test func theCompletionHandlerRunsOnceTheFileIsComplete() throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("handler.mp4")
        let writer = try Self.writtenClip(path)
        let done = Mutex<(status: AssetWriter.Status, frames: Int)?>(nil)
        writer.finishWriting {
            let frames = (try? FFprobe.frames(path).count) ?? -1
            done.withLock { $0 = (writer.status, frames) }
        }
        let deadline = Date(timeIntervalSinceNow: 10)
        while done.withLock({ $0 }) == nil && Date() < deadline { usleep(10_000) }
        let result = try #require(done.withLock { $0 })
        #expect(result.status == .completed)
        #expect(result.frames == 15)
    }

    @Test func awaitingFinishWritingCompletesTheFile() async throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("awaited.mp4")
        let writer = try Self.writtenClip(path)
        try await writer.finishWriting()
        #expect(writer.status == .completed)
        #expect(try FFprobe.frames(path).count == 15)
    }
}
