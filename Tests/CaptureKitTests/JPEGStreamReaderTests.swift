import CFFmpeg
import Foundation
import Testing
@testable import CaptureKit

/// Raw MJPEG streams split into images without libavformat's parser:
/// JPEG-shaped images (real markers and segments, made-up entropy-coded
/// data) with every structure that must not end an image early.
@Suite struct JPEGStreamReaderTests {
    /// A small deterministic random number generator (SplitMix64).
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: next()) }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    }

    static func segment(_ code: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 2
        return [0xFF, code, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    /// Entropy-coded data: 0xFF bytes are stuffed (0xFF 0x00); with
    /// `restarts`, restart markers come between intervals.
    static func entropyData(_ count: Int, restarts: Bool, random: inout Random) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + count / 64)
        var restart: UInt8 = 0
        while bytes.count < count {
            // Plenty of 0xFF bytes, so that stuffing is tested often.
            let byte: UInt8 = random.below(16) == 0 ? 0xFF : random.byte()
            bytes.append(byte)
            if byte == 0xFF { bytes.append(0x00) }
            if restarts, random.below(4000) == 0 {
                bytes += [0xFF, 0xD0 + restart]
                restart = (restart + 1) % 8
            }
        }
        return bytes
    }

    /// One image: SOI, APP0, optionally an APP1 holding a whole thumbnail
    /// JPEG (SOI and EOI inside a segment), tables, `scans` scans, then
    /// optionally fill bytes and EOI.
    static func image(size: Int, thumbnail: Bool, restarts: Bool, scans: Int, fill: Bool, end: Bool, random: inout Random) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += segment(0xE0, Array("JFIF".utf8) + [0, 1, 2, 0, 0, 1, 0, 1, 0, 0])
        if thumbnail {
            bytes += segment(0xE1, Array("Exif".utf8) + [0, 0, 0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x03, 0x01, 0xFF, 0xD9, 0xFF, 0xD8])
        }
        bytes += segment(0xDB, [0] + (0..<64).map { _ in random.byte() })
        bytes += segment(0xC0, [8, 0, 240, 1, 64, 3, 1, 0x21, 0, 2, 0x11, 1, 3, 0x11, 1])
        bytes += segment(0xC4, [0] + (0..<28).map { _ in random.byte() })
        for _ in 0..<scans {
            bytes += segment(0xDA, [3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0])
            bytes += entropyData(size / scans, restarts: restarts, random: &random)
        }
        if fill { bytes += [0xFF, 0xFF, 0xFF] }
        if end { bytes += [0xFF, 0xD9] }
        return bytes
    }

    /// Reads every image of the file at `path`.
    static func images(in path: String) throws -> [[UInt8]] {
        var io: UnsafeMutablePointer<AVIOContext>?
        try #require(avio_open(&io, path, AVIO_FLAG_READ) >= 0)
        defer { avio_closep(&io) }
        let reader = JPEGStreamReader(io: io!)
        var packet = av_packet_alloc()
        defer { av_packet_free(&packet) }
        var images = [[UInt8]]()
        while true {
            let result = reader.read(into: packet!)
            if result == .end { break }
            try #require(result == .image, "\(result)")
            images.append(Array(UnsafeBufferPointer(start: packet!.pointee.data, count: Int(packet!.pointee.size))))
            av_packet_unref(packet)
        }
        return images
    }

    @Test func imagesAreDelimitedByTheirMarkersAcrossBlockBoundaries() throws {
        let scratch = try WriterScratchDirectory()
        var random = Random(state: 7)
        var stream = [UInt8]()
        var expected = [[UInt8]]()
        // Leading junk (no 0xFF 0xD8 in it) before the first image.
        stream += [0x00, 0x12, 0xFF, 0x00, 0x34]
        for index in 0..<48 {
            // Mostly camera-sized images, one larger than the reader's starting buffer.
            let size = index == 20 ? 3 * JPEGStreamReader.blockSize : 2_000 + random.below(140_000)
            let unfinished = index == 31  // the next image starts before this one ends
            let image = Self.image(size: size, thumbnail: index % 3 == 0, restarts: index % 4 == 1, scans: index % 5 == 2 ? 3 : 1,
                                   fill: index % 7 == 3, end: !unfinished, random: &random)
            stream += image
            expected.append(image)
            // Junk between images is left out.
            if index % 9 == 4 && !unfinished { stream += [0x00, 0xFF, 0x00, 0x7A, 0x7B] }
        }
        // The last image, cut short by the end of the file, comes as it is.
        let cut = Self.image(size: 50_000, thumbnail: false, restarts: false, scans: 1, fill: false, end: true, random: &random)
        let kept = Array(cut.prefix(30_001))
        stream += kept
        expected.append(kept)
        #expect(stream.count > 10 * JPEGStreamReader.blockSize)

        let path = scratch.file("camera.mjpeg")
        try Data(stream).write(to: URL(fileURLWithPath: path))
        let images = try Self.images(in: path)
        #expect(images.count == expected.count)
        for (index, (image, wanted)) in zip(images, expected).enumerated() {
            #expect(image.count == wanted.count, "image \(index): \(image.count) bytes, not \(wanted.count)")
            #expect(image == wanted, "image \(index) differs")
        }
    }

    @Test(arguments: [[UInt8](), [0x00, 0x01, 0x02], [0x10, 0xFF], [0xFF, 0xD8, 0xFF]])
    func aStreamWithoutAWholeImageGivesNone(bytes: [UInt8]) throws {
        let scratch = try WriterScratchDirectory()
        let path = scratch.file("empty.mjpeg")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        // Three bytes from a start marker on are an image cut short (as libavformat gives it); two or fewer are nothing.
        let images = try Self.images(in: path)
        #expect(images == (bytes.count == 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 ? [bytes] : []))
    }
}
