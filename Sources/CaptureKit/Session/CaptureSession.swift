/// Coordinates capture from inputs to outputs, like AVCaptureSession: add
/// inputs and outputs, `startRunning()`, later `stopRunning()`. Each input's
/// capture loop runs on a thread of its own, blocking in poll(); samples go
/// to every output as they are captured, stamped on CLOCK_MONOTONIC.
public final class CaptureSession: @unchecked Sendable {
    public private(set) var inputs: [CaptureInput] = []
    public private(set) var outputs: [CaptureOutput] = []

    /// Told (on a capture thread) when an input's loop ends by itself: the
    /// end of a file, a device that went away, a failure.
    public var inputDidEnd: (@Sendable (CaptureInput, CaptureEnd) -> Void)?

    private let lock = WriterLock()
    private var running = false
    private var threads: [CaptureThread] = []
    private var stopSignals: [CaptureStopSignal] = []

    public init() {}

    public var isRunning: Bool { lock.withLock { running } }

    /// Whether an input can be added now (not while running, not twice).
    public func canAddInput(_ input: CaptureInput) -> Bool {
        lock.withLock { !running && !inputs.contains { $0 === input } }
    }

    public func addInput(_ input: CaptureInput) {
        lock.withLock { if !running && !inputs.contains(where: { $0 === input }) { inputs.append(input) } }
    }

    public func addOutput(_ output: CaptureOutput) {
        lock.withLock { if !running && !outputs.contains(where: { $0 === output }) { outputs.append(output) } }
    }

    /// Whether `device` can deliver video for `preset`: a size the preset
    /// needs among the device's real formats.
    public static func canSetSessionPreset(_ preset: SessionPreset, for device: CaptureDevice) -> Bool {
        guard device.mediaType == .video, let formats = try? device.videoFormats() else { return false }
        return VideoFormatSelection.supports(preset: preset, in: formats)
    }

    /// Opens every input, tells the outputs, and starts a capture thread per
    /// input. Throws the first input's error, with nothing left running.
    public func startRunning() throws(CaptureError) {
        let (inputs, outputs) = lock.withLock { (self.inputs, self.outputs) }
        guard !isRunning else { return }
        do {
            for input in inputs { try input.open() }
            for output in outputs { try output.sessionWillStartRunning(inputs: inputs) }
        } catch {
            for input in inputs { input.close() }
            throw error
        }
        lock.withLock {
            running = true
            for (index, input) in inputs.enumerated() {
                let stop = CaptureStopSignal()
                stopSignals.append(stop)
                let name = "capture-\(input.mediaType.rawValue.prefix(1))\(index)"
                threads.append(CaptureThread(name: name) { [weak self] in
                    let end = input.source.run(stop: stop) { sample in
                        for output in outputs { output.capture(sample, from: input) }
                    }
                    if end != .stopped {
                        for output in outputs { output.input(input, didEnd: end) }
                        self?.inputDidEnd?(input, end)
                    }
                })
            }
        }
    }

    /// Stops every capture loop, waits for them to end, closes the inputs
    /// and tells the outputs (which then finish what they hold).
    public func stopRunning() {
        let (threads, signals, outputs, inputs) = lock.withLock { () -> ([CaptureThread], [CaptureStopSignal], [CaptureOutput], [CaptureInput]) in
            guard running else { return ([], [], [], []) }
            running = false
            defer { self.threads = []; stopSignals = [] }
            return (self.threads, stopSignals, self.outputs, self.inputs)
        }
        guard !threads.isEmpty || !outputs.isEmpty else { return }
        for signal in signals { signal.raise() }
        for thread in threads { thread.join() }
        for input in inputs { input.close() }
        for output in outputs { output.sessionDidStopRunning() }
    }
}
