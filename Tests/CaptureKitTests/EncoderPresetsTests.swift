@testable import CaptureKit
import Testing

/// The speed presets each encoder states, as libavcodec gives them, and
/// that the presets VideoEncoder uses by default are among them.
struct EncoderPresetsTests {
    @Test func x264AndX265TakeTheirNames() throws {
        for codec in [VideoCodec.h264, .hevc] {
            let (encoder, presets) = try #require(EncoderCatalog.presets(for: codec))
            #expect(encoder == (codec == .h264 ? "libx264" : "libx265"))
            #expect(presets == .names(VideoOutputSettings.x26xPresets))
            #expect(presets.accepts("ultrafast") && presets.accepts("veryslow"))
            #expect(!presets.accepts("Fast") && !presets.accepts("5"))
        }
    }

    @Test func vp9TakesTheCpuUsedRangeLibavcodecStates() throws {
        let (encoder, presets) = try #require(EncoderCatalog.presets(for: .vp9))
        #expect(encoder == "libvpx-vp9")
        guard case .levels(let range) = presets else {
            Issue.record("libvpx-vp9's cpu-used is an integer option, got \(presets)")
            return
        }
        // VideoEncoder's default, cpu-used 8, is in it; words are not.
        #expect(range.contains(8) && range.contains(0))
        #expect(presets.accepts("8") && !presets.accepts("fast") && !presets.accepts(String(range.upperBound + 1)))
        #expect(presets.description == "a number from \(range.lowerBound) to \(range.upperBound)")
    }

    @Test func av1TakesItsEncodersLevelsAndTheDefaultIsOne() throws {
        guard let found = EncoderCatalog.presets(for: .av1) else { return }  // no AV1 encoder in this FFmpeg
        let (encoder, presets) = found
        let defaults = ["libsvtav1": "10", "libaom-av1": "8", "librav1e": "10"]
        let usual = try #require(defaults[encoder])
        #expect(presets.accepts(usual), "\(encoder): \(presets)")
        #expect(!presets.accepts("medium"))
    }

    @Test func mjpegHasNone() throws {
        let (encoder, presets) = try #require(EncoderCatalog.presets(for: .mjpeg))
        #expect(encoder == "mjpeg")
        #expect(presets == .none)
        #expect(!presets.accepts("fast"))
    }

    @Test func descriptionsListWhatToWrite() {
        #expect(EncoderPresets.names(["a", "b", "c"]).description == "a, b or c")
        #expect(EncoderPresets.levels(-1...13).description == "a number from -1 to 13")
    }
}
