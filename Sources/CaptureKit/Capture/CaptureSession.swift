/// Coordinates capture from inputs to outputs, like AVCaptureSession: add
/// inputs and outputs, `startRunning()`, later `stopRunning()`. Inputs and
/// outputs may be added and removed while it runs (between
/// `beginConfiguration()` and `commitConfiguration()` to change several at
/// once), and outputs start and stop recording while the devices stay open.
///
/// Each input's capture loop runs on a thread of its own, blocking in
/// poll(); samples go to every output as they are captured, stamped on
/// CLOCK_MONOTONIC. The session owns the devices' life: it opens them when
/// it starts (taking the configuration lock of each camera whose input asks
/// for it), closes them when it stops, and tells outputs and observers when
/// one ends by itself (a file played to its end, a device that went away).
public final class CaptureSession: Sendable {

    /// What observers hear, like AVCaptureSession's notifications.
    public enum Notification: Sendable {
        /// An input's capture loop ended by itself, with how it ended.
        case inputDidEnd(CaptureInput, CaptureEnd)
        /// A device went away while the session ran (AVCaptureDeviceWasDisconnected).
        case deviceWasDisconnected(String)
        /// Capture failed on an input (AVCaptureSessionRuntimeError).
        case runtimeError(CaptureError)
        case didStartRunning
        case didStopRunning
    }

    /// Everything the session knows, behind one lock; capture threads read
    /// the outputs through `outputsSnapshot()`.
    private struct State {
        var inputList: [CaptureInput] = []
        var outputList: [CaptureOutput] = []
        var running = false
        var configuring = 0
        /// Changes made inside `beginConfiguration()`, applied at the commit.
        var pendingInputs: (added: [CaptureInput], removed: [CaptureInput]) = ([], [])
        var pendingOutputs: (added: [CaptureOutput], removed: [CaptureOutput]) = ([], [])
        var loops: [ObjectIdentifier: CaptureLoop] = [:]
        var locks: [ObjectIdentifier: ConfigurationLock] = [:]
        var observers: [Int: @Sendable (Notification) -> Void] = [:]
        var nextObserver = 0
        var preset: SessionPreset?
        var inputEndHandler: (@Sendable (CaptureInput, CaptureEnd) -> Void)?
    }
    private let state = Locked(State())

    /// One input's capture thread and the signal that stops it.
    private struct CaptureLoop {
        let thread: CaptureThread
        let stop: CaptureStopSignal
    }

    public init() {
        // Before any capture thread reads the environment (see EncoderLibraryLogs).
        EncoderLibraryLogs.quiet()
    }

    public var inputs: [CaptureInput] { state.withLock { state in state.inputList } }

    /// The quality level of the cameras' video, like AVCaptureSession's
    /// `sessionPreset`: a camera whose device has no format chosen
    /// (`activeFormat`) captures at the size the preset names or nearest
    /// to it; nil leaves each device at its default. Applies to inputs the
    /// session opens from then on (when it starts, or when they are added
    /// while it runs).
    public var sessionPreset: SessionPreset? {
        get { state.withLock { state in state.preset } }
        set { state.withLock { state in state.preset = newValue } }
    }

    /// Whether every camera input can deliver video for `preset`.
    public func canSetSessionPreset(_ preset: SessionPreset) -> Bool {
        inputs.compactMap { ($0 as? CaptureDeviceInput)?.device }.filter { $0.mediaType == .video }
            .allSatisfy { $0.activeFormat != nil || Self.canSetSessionPreset(preset, for: $0) }
    }
    public var outputs: [CaptureOutput] { state.withLock { state in state.outputList } }
    public var isRunning: Bool { state.withLock { state in state.running } }

    /// Told (on a capture thread) when an input's loop ends by itself: the
    /// end of a file, a device that went away, a failure. (Also heard by
    /// observers as `.inputDidEnd`.)
    public var inputDidEnd: (@Sendable (CaptureInput, CaptureEnd) -> Void)? {
        get { state.withLock { state in state.inputEndHandler } }
        set { state.withLock { state in state.inputEndHandler = newValue } }
    }

    /// Registers `observer` for the session's notifications (heard on the
    /// thread where they happen); returns a token for `removeObserver`.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (Notification) -> Void) -> Int {
        state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
    }

    public func removeObserver(_ token: Int) {
        state.withLock { state in _ = state.observers.removeValue(forKey: token) }
    }

    private func notify(_ notification: Notification) {
        for observer in state.withLock({ state in Array(state.observers.values) }) { observer(notification) }
    }

    // MARK: Configuration

    /// Starts a batch of changes: inputs and outputs added or removed until
    /// `commitConfiguration()` take effect together then.
    public func beginConfiguration() {
        state.withLock { state in state.configuring += 1 }
    }

    /// Applies the changes made since `beginConfiguration()`. While running,
    /// added inputs are opened and start capturing (an input that cannot be
    /// opened is not added, and observers hear the error), removed ones stop.
    public func commitConfiguration() {
        let changes = state.withLock { state -> (inputs: ([CaptureInput], [CaptureInput]), outputs: ([CaptureOutput], [CaptureOutput]))? in
            guard state.configuring > 0 else { return nil }
            state.configuring -= 1
            guard state.configuring == 0 else { return nil }
            defer { state.pendingInputs = ([], []); state.pendingOutputs = ([], []) }
            return ((state.pendingInputs.added, state.pendingInputs.removed), (state.pendingOutputs.added, state.pendingOutputs.removed))
        }
        guard let changes else { return }
        apply(inputs: changes.inputs, outputs: changes.outputs)
    }

    /// Whether `input` can be added: not already in the session.
    public func canAddInput(_ input: CaptureInput) -> Bool {
        state.withLock { state in !state.inputList.contains { $0 === input } && !state.pendingInputs.added.contains { $0 === input } }
    }

    public func addInput(_ input: CaptureInput) {
        guard canAddInput(input) else { return }
        change { $0.pendingInputs.added.append(input) }
    }

    public func removeInput(_ input: CaptureInput) {
        change { $0.pendingInputs.removed.append(input) }
    }

    /// Whether `output` can be added: not already in the session.
    public func canAddOutput(_ output: CaptureOutput) -> Bool {
        state.withLock { state in !state.outputList.contains { $0 === output } && !state.pendingOutputs.added.contains { $0 === output } }
    }

    /// Adds an output; on a running session it starts receiving samples at
    /// once (a file output then records when asked to).
    public func addOutput(_ output: CaptureOutput) {
        guard canAddOutput(output) else { return }
        change { $0.pendingOutputs.added.append(output) }
    }

    /// Removes an output; a recording it has under way is finished.
    public func removeOutput(_ output: CaptureOutput) {
        change { $0.pendingOutputs.removed.append(output) }
    }

    /// Records a change, and applies it now unless a configuration batch is open.
    private func change(_ body: (inout State) -> Void) {
        state.withLock { state in
            state.configuring += 1
            body(&state)
        }
        commitConfiguration()
    }

    private func apply(inputs: ([CaptureInput], [CaptureInput]), outputs: ([CaptureOutput], [CaptureOutput])) {
        let (addedInputs, removedInputs) = inputs
        let (addedOutputs, removedOutputs) = outputs
        let isRunning = state.withLock { state -> Bool in
            state.inputList.removeAll { input in removedInputs.contains { $0 === input } }
            state.outputList.removeAll { output in removedOutputs.contains { $0 === output } }
            if !state.running {
                state.inputList += addedInputs
                state.outputList += addedOutputs
            }
            return state.running
        }
        defer { updateConnections() }
        guard isRunning else { return }
        for input in removedInputs { stopLoop(of: input) }
        var opened: [CaptureInput] = []
        for input in addedInputs {
            do throws(CaptureError) {
                try open(input)
                do {
                    try input.startStreaming()
                } catch {
                    close(input)
                    throw error
                }
                opened.append(input)
            } catch {
                notify(.runtimeError(error))
            }
        }
        let current = state.withLock { state -> [CaptureInput] in
            state.inputList += opened
            return state.inputList
        }
        if !addedInputs.isEmpty || !removedInputs.isEmpty {
            for output in state.withLock({ state in state.outputList }) { output.sessionDidChangeInputs(current) }
        }
        for output in removedOutputs { output.sessionDidStopRunning() }
        for output in addedOutputs {
            // A recording it was asked for before begins now; if its first
            // file cannot be created, its delegate has heard why.
            output.updateConnections(inputs: current)
            try? output.sessionWillStartRunning(inputs: current)
            state.withLock { state in state.outputList.append(output) }
        }
        startClocks(of: opened)
        for input in opened { startLoop(of: input) }
    }

    /// Sources that make samples by a clock of their own start it together,
    /// at this moment, however late their threads come to run.
    private func startClocks(of inputs: [CaptureInput]) {
        let now = MonotonicClock.nowNanoseconds()
        for input in inputs { (input.source as? any SessionClockedSource)?.startClock(at: now) }
    }

    // MARK: Running

    /// Whether `device` can deliver video for `preset`: a size the preset
    /// needs among the device's real formats.
    public static func canSetSessionPreset(_ preset: SessionPreset, for device: CaptureDevice) -> Bool {
        guard device.mediaType == .video, let formats = try? device.videoFormats() else { return false }
        return VideoFormatSelection.supports(preset: preset, in: formats)
    }

    /// Opens every input (taking the cameras' configuration locks), starts
    /// each streaming (a camera its bus has no bandwidth for throws
    /// `noBandwidth` here, before any output begins), tells the outputs, and
    /// starts a capture thread per input. Throws the first error, with
    /// nothing left open or running; two inputs of one camera are refused
    /// (`sameCameraTwice`) before any is opened.
    public func startRunning() throws(CaptureError) {
        let (inputs, outputs) = state.withLock { state in (state.inputList, state.outputList) }
        guard !isRunning else { return }
        var told: [CaptureOutput] = []
        // The same camera twice would only fail later, less clearly.
        let cameras = inputs.compactMap { $0.source as? V4L2CaptureSource }
        if let twice = cameras.first(where: { camera in cameras.filter { $0.uniqueID == camera.uniqueID }.count > 1 }) {
            throw .sameCameraTwice(twice.path, uniqueID: twice.uniqueID)
        }
        do {
            for input in inputs { try open(input) }
            // Several cameras stream before any output begins: one the bus
            // cannot carry beside the others fails here, before a file exists.
            // One camera starts in its capture loop, as the outputs are ready.
            let cameras = inputs.filter { $0.mediaType == .video }
            if cameras.count > 1 { for camera in cameras { try camera.startStreaming() } }
            for output in outputs {
                output.updateConnections(inputs: inputs)
                try output.sessionWillStartRunning(inputs: inputs)
                told.append(output)
            }
        } catch {
            for output in told { output.sessionDidStopRunning() }
            for input in inputs { close(input) }
            throw error
        }
        state.withLock { state in state.running = true }
        startClocks(of: inputs)
        for input in inputs { startLoop(of: input) }
        notify(.didStartRunning)
    }

    /// Stops every capture loop, waits for them to end, closes the inputs
    /// (releasing their configuration locks) and tells the outputs (which
    /// then finish what they hold).
    public func stopRunning() {
        let (wasRunning, inputs, outputs) = state.withLock { state -> (Bool, [CaptureInput], [CaptureOutput]) in
            defer { state.running = false }
            return (state.running, state.inputList, state.outputList)
        }
        guard wasRunning else { return }
        for input in inputs { stopLoop(of: input) }
        for output in outputs { output.sessionDidStopRunning() }
        notify(.didStopRunning)
    }

    /// Opens an input, with its camera's configuration lock when it asks for it.
    private func open(_ input: CaptureInput) throws(CaptureError) {
        input.prepare(sessionPreset: sessionPreset)
        if input.locksConfiguration, let camera = input.source as? V4L2CaptureSource {
            do {
                let held = try ConfigurationLock.acquireAdvisory(devicePath: camera.path)
                state.withLock { state in state.locks[ObjectIdentifier(input)] = held }
            } catch .locked(_, let holder) {
                throw .configurationLocked(camera.path, holder: holder)
            } catch {
                throw .device(.busy(camera.path, reason: error.description))
            }
            // The driver's half of the lock: record priority on the capture handle.
            camera.holdsRecordPriority = true
        }
        do throws(CaptureError) {
            try input.open()
            if let processor = input.videoFrameProcessor, let format = input.source.videoFormat, processor.outputFormat(for: format) == nil {
                throw CaptureError.processorCannotTake(input.source.path, fourcc: format.fourcc)
            }
        } catch {
            close(input)
            throw error
        }
    }

    private func close(_ input: CaptureInput) {
        input.close()
        state.withLock { state in state.locks.removeValue(forKey: ObjectIdentifier(input)) }?.release()
    }

    private func startLoop(of input: CaptureInput) {
        let stop = CaptureStopSignal()
        let index = state.withLock { state in state.inputList.firstIndex { $0 === input } ?? state.inputList.count }
        let name = "capture-\(input.mediaType.rawValue.prefix(1))\(index)"
        let thread: CaptureThread
        do {
            thread = try CaptureThread.start(name: name) { [weak self] in
                guard let self else { return }
                let processor = input.videoFrameProcessor
                let sourceFormat = input.source.videoFormat
                let end = input.source.run(stop: stop) { captured in
                    // Counted as the device gave it, whatever the processor makes of it.
                    input.count(captured)
                    // Changed once here, so every output of the input gets the same frame.
                    var sample = captured
                    if let processor, let sourceFormat, case .video(let video) = captured {
                        guard let processed = processor.process(video, of: sourceFormat) else { return }
                        sample = .video(processed)
                    }
                    input.meterLevels(of: sample)
                    input.compression.capture(sample)
                    for output in self.outputsSnapshot() { output.capture(sample, from: input) }
                }
                if end != .stopped { self.inputEnded(input, end) }
            }
        } catch {
            // No thread to capture on: the input ends at once, as a loop that
            // failed would (its outputs finish, observers hear a runtime error
            // naming pthread_create), and is closed here, having no loop to stop.
            close(input)
            inputEnded(input, .failed(.io(name, error)))
            return
        }
        state.withLock { state in state.loops[ObjectIdentifier(input)] = CaptureLoop(thread: thread, stop: stop) }
    }

    private func stopLoop(of input: CaptureInput) {
        guard let loop = state.withLock({ state in state.loops.removeValue(forKey: ObjectIdentifier(input)) }) else { return }
        loop.stop.raise()
        loop.thread.join()
        // What its encoders hold reaches their sinks before the outputs hear of the stop.
        input.compression.finish()
        close(input)
    }

    /// The outputs samples go to now (read for every sample, on the capture threads).
    private func outputsSnapshot() -> [CaptureOutput] { state.withLock { state in state.outputList } }

    /// Gives every output a connection to each input (see `CaptureConnection`).
    private func updateConnections() {
        let (inputs, outputs) = state.withLock { state in (state.inputList, state.outputList) }
        for output in outputs { output.updateConnections(inputs: inputs) }
    }

    /// An input's loop ended by itself: every output hears it (a file output
    /// finishes its recording with the reason), then the observers.
    private func inputEnded(_ input: CaptureInput, _ end: CaptureEnd) {
        // Its encoders' last frames reach their sinks before the outputs hear of the end.
        input.compression.finish()
        for output in outputsSnapshot() { output.input(input, didEnd: end) }
        state.withLock { state in state.inputEndHandler }?(input, end)
        notify(.inputDidEnd(input, end))
        switch end {
        case .deviceLost(let device): notify(.deviceWasDisconnected(device))
        case .failed(let error): notify(.runtimeError(error))
        case .endOfInput, .stopped: break
        }
    }
}
