import Foundation
// capctl-bench: measurements behind scripts/bench (not a test).
//
//   capctl-bench writer  N OUT   append N raw 1280x720 YUYV frames through AssetWriter
//   capctl-bench direct  N OUT   the same frames through libswscale, libavcodec and
//                                libavformat called directly, with the same settings
//   capctl-bench rawfile N OUT   write the frames to OUT as raw YUYV (input for ffmpeg)
//   capctl-bench session N DIR K record N frames of a live 30 fps camera with K movie
//                                outputs of the same settings on one session (one shared
//                                encoder); prints CPU seconds, frames per file, dropped
//   capctl-bench levels N FORMAT meter N seconds of 48 kHz stereo FORMAT (s16, s32, f32)
//                                audio in 20 ms buffers (LevelsBench.swift)
//   capctl-bench overlay N FORMAT WxH  burn a time stamp into N frames (TextOverlayRenderer);
//                                prints microseconds of CPU per frame, and of a plain copy
//   capctl-bench overlay-mjpeg N WxH FILE  the same into N MJPEG frames (the JPEG in FILE),
//                                decoded to 4:2:0 first; prints microseconds of CPU per frame
//
// Prints one line: the mode, frames, and CPU seconds (user + system, all
// threads) spent from the first frame to the finished file.
import CaptureKit
import CFFmpeg
#if canImport(Glibc)
import Glibc
#endif

let width: Int32 = 1280, height: Int32 = 720
let frameRate: Int32 = 30

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("capctl-bench: \(message)\n".utf8))
    exit(1)
}

/// 30 distinct camera-like frames (a moving gradient with bars), YUYV 4:2:2.
func makeFrames() -> [[UInt8]] {
    (0..<30).map { index in
        var bytes = [UInt8](repeating: 0, count: Int(width * height * 2))
        for y in 0..<Int(height) {
            for x in stride(from: 0, to: Int(width), by: 2) {
                let offset = (y * Int(width) + x) * 2
                let luma = UInt8(truncatingIfNeeded: (x + y + index * 8) & 0xff)
                bytes[offset] = luma
                bytes[offset + 1] = UInt8(truncatingIfNeeded: 128 + (x >> 4) - index)
                bytes[offset + 2] = ((x / 80 + index) % 2 == 0) ? luma : 255 &- luma
                bytes[offset + 3] = UInt8(truncatingIfNeeded: 128 + (y >> 3) + index)
            }
        }
        return bytes
    }
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
        + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

// The encoder settings both paths use.
let preset = "veryfast"
let crf = "23"
let gop: Int32 = 60
/// Encoder threads (CAPCTL_BENCH_THREADS, default 1: one thread measures
/// overhead without the noise of threads waiting on each other).
let threads = getenv("CAPCTL_BENCH_THREADS").flatMap { Int32(String(cString: $0)) } ?? 1

func runWriter(count: Int, path: String, frames: [[UInt8]]) throws -> Double {
    let writer = try AssetWriter(outputPath: path)
    let input = AssetWriterInput(outputSettings: .video(VideoOutputSettings(
        codec: .h264, width: Int(width), height: Int(height), quality: Int(crf), preset: preset,
        maxKeyFrameInterval: Int(gop), expectedFrameDuration: MediaTime(value: 1, timescale: frameRate),
        encoderOptions: ["threads": String(threads)])))
    try writer.add(input)
    let start = cpuSeconds()
    try writer.startWriting()
    try writer.startSession(atSourceTime: .zero)
    for index in 0..<count {
        try frames[index % frames.count].withUnsafeBytes { bytes in
            try input.appendPixels(bytes, format: .yuyv422, width: Int(width), height: Int(height),
                                   presentationTime: MediaTime(value: Int64(index), timescale: frameRate))
        }
    }
    try writer.finishWriting()
    return cpuSeconds() - start
}

func check(_ status: Int32, _ call: String) {
    if status < 0 { fail("\(call): error \(status)") }
}

func runDirect(count: Int, path: String, frames: [[UInt8]]) -> Double {
    let start = cpuSeconds()
    guard let codec = avcodec_find_encoder_by_name("libx264"), let context = avcodec_alloc_context3(codec) else { fail("no libx264") }
    var output: UnsafeMutablePointer<AVFormatContext>?
    check(avformat_alloc_output_context2(&output, nil, "mp4", path), "avformat_alloc_output_context2")
    guard let output, let stream = avformat_new_stream(output, nil) else { fail("no output") }
    context.pointee.width = width
    context.pointee.height = height
    context.pointee.pix_fmt = AV_PIX_FMT_YUV420P
    context.pointee.time_base = AVRational(num: 1, den: 90000)
    context.pointee.framerate = AVRational(num: frameRate, den: 1)
    context.pointee.sample_aspect_ratio = AVRational(num: 1, den: 1)
    context.pointee.gop_size = gop
    context.pointee.thread_count = threads
    context.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
    var options: OpaquePointer?
    av_dict_set(&options, "preset", preset, 0)
    av_dict_set(&options, "crf", crf, 0)
    av_dict_set(&options, "forced-idr", "1", 0)
    check(avcodec_open2(context, codec, &options), "avcodec_open2")
    av_dict_free(&options)
    check(avcodec_parameters_from_context(stream.pointee.codecpar, context), "parameters")
    stream.pointee.time_base = context.pointee.time_base
    check(avio_open(&output.pointee.pb, path, AVIO_FLAG_WRITE), "avio_open")
    check(avformat_write_header(output, nil), "write_header")
    let scaler = sws_getContext(width, height, AV_PIX_FMT_YUYV422, width, height, AV_PIX_FMT_YUV420P, SWS_BICUBIC, nil, nil, nil)
    let frame = av_frame_alloc()!
    frame.pointee.width = width
    frame.pointee.height = height
    frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
    check(av_frame_get_buffer(frame, 0), "av_frame_get_buffer")
    let packet = av_packet_alloc()!
    func drain() {
        while avcodec_receive_packet(context, packet) >= 0 {
            av_packet_rescale_ts(packet, context.pointee.time_base, stream.pointee.time_base)
            packet.pointee.stream_index = 0
            check(av_interleaved_write_frame(output, packet), "write_frame")
        }
    }
    for index in 0..<count {
        check(av_frame_make_writable(frame), "make_writable")
        frames[index % frames.count].withUnsafeBytes { bytes in
            var source: [UnsafePointer<UInt8>?] = [bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), nil, nil, nil]
            var strides: [Int32] = [width * 2, 0, 0, 0]
            withUnsafeMutablePointer(to: &frame.pointee.data) { data in
                withUnsafeMutablePointer(to: &frame.pointee.linesize) { lines in
                    data.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { dst in
                        lines.withMemoryRebound(to: Int32.self, capacity: 8) { dstStride in
                            _ = sws_scale(scaler, &source, &strides, 0, height, dst, dstStride)
                        }
                    }
                }
            }
        }
        frame.pointee.pts = Int64(index) * Int64(90000 / frameRate)
        check(avcodec_send_frame(context, frame), "send_frame")
        drain()
    }
    check(avcodec_send_frame(context, nil), "flush")
    drain()
    check(av_write_trailer(output), "write_trailer")
    avio_closep(&output.pointee.pb)
    let elapsed = cpuSeconds() - start
    var contextPointer: UnsafeMutablePointer<AVCodecContext>? = context
    avcodec_free_context(&contextPointer)
    avformat_free_context(output)
    return elapsed
}

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "overlay-mjpeg", let count = Int(arguments[2]), count > 0 {
    print(String(format: "overlay-mjpeg %@ %.1f", arguments[3], runOverlayMJPEG(count: count, size: arguments[3], path: arguments[4])))
    exit(0)
}
if arguments.count == 5, arguments[1] == "overlay", let count = Int(arguments[2]), count > 0 {
    let result = runOverlay(count: count, format: arguments[3], size: arguments[4])
    print(String(format: "overlay %@ %@ %.1f copy %.1f", arguments[3], arguments[4], result.overlay, result.copy))
    exit(0)
}
guard arguments.count >= 4, let count = Int(arguments[2]), count > 0 else {
    fail("usage: capctl-bench writer|direct|rawfile N OUT, capctl-bench session N DIR OUTPUTS, capctl-bench levels N FORMAT, or capctl-bench overlay N FORMAT WxH")
}
// libavcodec's log lines cost time too; both paths run silent.
av_log_set_level(AV_LOG_QUIET)
let frames = makeFrames()
let path = arguments[3]
switch arguments[1] {
case "writer":
    do {
        let seconds = try runWriter(count: count, path: path, frames: frames)
        print("writer \(count) \(seconds)")
    } catch {
        fail("\(error)")
    }
case "direct":
    print("direct \(count) \(runDirect(count: count, path: path, frames: frames))")
case "rawfile":
    guard let file = fopen(path, "wx") else { fail("\(path): cannot create") }
    for index in 0..<count {
        frames[index % frames.count].withUnsafeBytes { _ = fwrite($0.baseAddress, 1, $0.count, file) }
    }
    fclose(file)
case "session":
    guard arguments.count == 5, let outputs = Int(arguments[4]), outputs > 0 else { fail("usage: capctl-bench session N DIR OUTPUTS") }
    do {
        let result = try runSession(outputs: outputs, count: count, directory: path)
        print("session \(outputs) \(result.cpu) frames \(result.frames.map(String.init).joined(separator: ",")) dropped \(result.dropped)")
    } catch {
        fail("\(error)")
    }
case "levels":
    guard let format = AudioSampleFormat(rawValue: path), [.s16, .s32, .f32].contains(format) else {
        fail("usage: capctl-bench levels SECONDS s16|s32|f32")
    }
    print("levels \(count) \(format.rawValue) \(runLevels(seconds: count, format: format))")
default:
    fail("unknown mode \(arguments[1])")
}
