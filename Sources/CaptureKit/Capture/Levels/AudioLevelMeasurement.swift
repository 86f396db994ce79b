/// The loop over one buffer's samples that levels are made of: each
/// channel's largest magnitude and sum of squares, in full-scale units
/// (1.0 is full scale). It writes into arrays its caller keeps from buffer
/// to buffer, so that measuring allocates nothing.
enum AudioLevelMeasurement {
    /// Measures `buffer` into `peaks` and `sumSquares` (each must hold
    /// `buffer.channels` elements; they are overwritten) and answers the
    /// number of frames measured: the buffer's, or fewer when its bytes are
    /// short of them.
    static func measure(_ buffer: AudioSampleBuffer, peaks: inout [Float], sumSquares: inout [Double]) -> Int {
        let channels = buffer.channels
        let format = buffer.format
        let bytes = buffer.bytes
        guard channels > 0, peaks.count >= channels, sumSquares.count >= channels else { return 0 }
        let frames = min(buffer.frameCount, bytes.count / (channels * format.bytesPerSample))
        for channel in 0..<channels {
            peaks[channel] = 0
            sumSquares[channel] = 0
        }
        guard frames > 0 else { return 0 }
        // Interleaved: channel c is every `channels`-th sample from c. Planar: plane c is `frames` samples from c * frames.
        let stride = format.isPlanar ? 1 : channels
        for channel in 0..<channels {
            let start = format.isPlanar ? channel * frames : channel
            let (peak, sum): (Double, Double)
            switch format {
            case .s16, .s16Planar:
                (peak, sum) = signed16(bytes.bindMemory(to: Int16.self), start: start, stride: stride, count: frames)
            case .s32, .s32Planar:
                (peak, sum) = signed32(bytes.bindMemory(to: Int32.self), start: start, stride: stride, count: frames)
            case .f32, .f32Planar:
                (peak, sum) = float32(bytes.bindMemory(to: Float.self), start: start, stride: stride, count: frames)
            case .f64:
                (peak, sum) = float64(bytes.bindMemory(to: Double.self), start: start, stride: stride, count: frames)
            case .u8:
                (peak, sum) = unsigned8(bytes.bindMemory(to: UInt8.self), start: start, stride: stride, count: frames)
            }
            peaks[channel] = Float(peak)
            sumSquares[channel] = sum
        }
        return frames
    }

    /// Signed 16-bit: exact integer sums, scaled once (−32768 is full scale).
    private static func signed16(_ samples: UnsafeBufferPointer<Int16>, start: Int, stride: Int, count: Int) -> (Double, Double) {
        var peak: Int32 = 0
        var sum: Int64 = 0
        var index = start
        for _ in 0..<count {
            let value = Int32(samples[index])
            let magnitude = value < 0 ? -value : value
            if magnitude > peak { peak = magnitude }
            sum &+= Int64(value &* value)
            index &+= stride
        }
        let scale = 1.0 / 32768
        return (Double(peak) * scale, Double(sum) * scale * scale)
    }

    /// Signed 32-bit (also 24-bit samples in 32-bit words, as ALSA's S32 gives them): 2^31 is full scale.
    private static func signed32(_ samples: UnsafeBufferPointer<Int32>, start: Int, stride: Int, count: Int) -> (Double, Double) {
        var peak: Int64 = 0
        var sum = 0.0
        var index = start
        for _ in 0..<count {
            let value = Int64(samples[index])
            let magnitude = value < 0 ? -value : value
            if magnitude > peak { peak = magnitude }
            let real = Double(value)
            sum += real * real
            index &+= stride
        }
        let scale = 1.0 / 2_147_483_648
        return (Double(peak) * scale, sum * scale * scale)
    }

    /// Floating point: 1.0 is full scale (louder samples read above 0 dBFS).
    private static func float32(_ samples: UnsafeBufferPointer<Float>, start: Int, stride: Int, count: Int) -> (Double, Double) {
        var peak: Float = 0
        var sum = 0.0
        var index = start
        for _ in 0..<count {
            let value = samples[index]
            let magnitude = abs(value)
            if magnitude > peak { peak = magnitude }
            sum += Double(value * value)
            index &+= stride
        }
        return (peak.isFinite ? Double(peak) : 0, sum.isFinite ? sum : 0)
    }

    private static func float64(_ samples: UnsafeBufferPointer<Double>, start: Int, stride: Int, count: Int) -> (Double, Double) {
        var peak = 0.0
        var sum = 0.0
        var index = start
        for _ in 0..<count {
            let value = samples[index]
            let magnitude = abs(value)
            if magnitude > peak { peak = magnitude }
            sum += value * value
            index &+= stride
        }
        return (peak.isFinite ? peak : 0, sum.isFinite ? sum : 0)
    }

    /// Unsigned 8-bit: 128 is zero, 128 steps are full scale.
    private static func unsigned8(_ samples: UnsafeBufferPointer<UInt8>, start: Int, stride: Int, count: Int) -> (Double, Double) {
        var peak: Int32 = 0
        var sum: Int64 = 0
        var index = start
        for _ in 0..<count {
            let value = Int32(samples[index]) - 128
            let magnitude = value < 0 ? -value : value
            if magnitude > peak { peak = magnitude }
            sum &+= Int64(value &* value)
            index &+= stride
        }
        let scale = 1.0 / 128
        return (Double(peak) * scale, Double(sum) * scale * scale)
    }
}
