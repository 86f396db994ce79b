import CV4L2
import Foundation
import Glibc
import Testing
@testable import CaptureKit

/// The checked wrapper every system call goes through: EINTR is retried,
/// a failure keeps its errno and names the call, and mocking (as
/// swift-system's MockingDriver) makes any call fail on this thread only.
@Suite struct SystemCallTests {
    @Test func anInterruptedCallIsRetriedUntilItRuns() throws {
        let info = try SystemCallMocking.withMocking { (driver) throws(SystemCallError) -> stat in
            driver.forcedErrno = .counted(errno: EINTR, count: 3)
            let info = try Posix.stat("/")
            // Three interrupted attempts, then the real one.
            #expect(driver.trace == Array(repeating: "stat(/)", count: 4))
            #expect(driver.forcedErrno == .none)
            return info
        }
        #expect(info.st_mode & S_IFMT == S_IFDIR)
    }

    @Test func aFailureNamesTheCallAndKeepsErrno() throws {
        let missing = "/nonexistent-\(getpid())/file"
        #expect(throws: SystemCallError(call: "open(\(missing))", errno: ENOENT)) {
            try Posix.open(missing, O_RDONLY | O_CLOEXEC)
        }
        let error = SystemCallError(call: "open(\(missing))", errno: ENOENT)
        #expect(error.description == "open(\(missing)): No such file or directory")
    }

    @Test func aForcedErrorIsThrownWithTheCallsName() throws {
        let pipe = try Posix.nonBlockingPipe()
        defer { try? Posix.close(pipe.readEnd); try? Posix.close(pipe.writeEnd) }
        var bytes = [UInt8](repeating: 0, count: 4)
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .always(errno: EIO)
            #expect(throws: SystemCallError(call: "read(/dev/fake)", errno: EIO)) {
                try bytes.withUnsafeMutableBytes { _ = try Posix.read(pipe.readEnd, into: $0, path: "/dev/fake") }
            }
            // Still failing: `always` does not run out.
            #expect(throws: SystemCallError(call: "poll", errno: EIO)) {
                var entries = [pollfd(fd: pipe.readEnd, events: Int16(POLLIN), revents: 0)]
                try Posix.poll(&entries, timeout: 0)
            }
            #expect(driver.trace == ["read(/dev/fake)", "poll"])
        }
        // Mocking is over: the empty non-blocking pipe answers EAGAIN for real.
        #expect(throws: SystemCallError(call: "read", errno: EAGAIN)) {
            try bytes.withUnsafeMutableBytes { _ = try Posix.read(pipe.readEnd, into: $0) }
        }
    }

    @Test func onlyCallsWithTheForcedPrefixFail() throws {
        let pipe = try Posix.nonBlockingPipe()
        defer { try? Posix.close(pipe.readEnd); try? Posix.close(pipe.writeEnd) }
        try SystemCallMocking.withMocking { (driver) throws in
            driver.forcedErrno = .always(errno: ENODEV)
            driver.forcedCallPrefix = "ioctl(VIDIOC_DQBUF)"
            var one: UInt8 = 7
            let written = try withUnsafeBytes(of: &one) { try Posix.write(pipe.writeEnd, from: $0) }
            #expect(written == 1)
            var buffer = v4l2_buffer()
            let descriptor = V4L2Descriptor(fd: pipe.readEnd, throughLibv4l2: false)
            #expect(throws: SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: ENODEV)) {
                try descriptor.request("VIDIOC_DQBUF", cv4l2_VIDIOC_DQBUF, &buffer)
            }
            #expect(driver.trace == ["write", "ioctl(VIDIOC_DQBUF)"])
        }
    }

    /// An ioctl a file does not understand fails with ENOTTY, named by its request;
    /// an interrupted one is made again.
    @Test func anIoctlIsNamedByItsRequestAndRetried() throws {
        let pipe = try Posix.nonBlockingPipe()
        defer { try? Posix.close(pipe.readEnd); try? Posix.close(pipe.writeEnd) }
        let descriptor = V4L2Descriptor(fd: pipe.readEnd, throughLibv4l2: false)
        var capability = v4l2_capability()
        #expect(throws: SystemCallError(call: "ioctl(VIDIOC_QUERYCAP)", errno: ENOTTY)) {
            try descriptor.request("VIDIOC_QUERYCAP", cv4l2_VIDIOC_QUERYCAP, &capability)
        }
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .counted(errno: EINTR, count: 2)
            #expect(throws: SystemCallError(call: "ioctl(VIDIOC_QUERYCAP)", errno: ENOTTY)) {
                try descriptor.request("VIDIOC_QUERYCAP", cv4l2_VIDIOC_QUERYCAP, &capability)
            }
            #expect(driver.trace.count == 3)
        }
    }

    /// close(2) is never made twice: after EINTR Linux has released the descriptor.
    @Test func closeIsNotRetriedAfterAnInterruption() throws {
        let pipe = try Posix.nonBlockingPipe()
        defer { try? Posix.close(pipe.writeEnd) }
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .counted(errno: EINTR, count: 1)
            #expect(throws: SystemCallError(call: "close(/tmp/x)", errno: EINTR)) { try Posix.close(pipe.readEnd, path: "/tmp/x") }
            #expect(driver.trace == ["close(/tmp/x)"])
        }
        // The forced failure never reached the kernel: the descriptor is still open.
        #expect(throws: Never.self) { try Posix.fcntl(pipe.readEnd, F_GETFD) }
        try Posix.close(pipe.readEnd)
    }

    /// alsa-lib's convention: a negative result is the negated errno; -EINTR is retried.
    @Test func negatedErrnoResultsAreRetriedOrThrown() throws {
        var answers = [-Int(EINTR), -Int(EINTR), 480]
        var calls = 0
        let read = try negatedErrnoCall("snd_pcm_readi") { () -> Int in
            calls += 1
            return answers.removeFirst()
        }
        #expect(read == 480)
        #expect(calls == 3)
        #expect(throws: SystemCallError(call: "snd_pcm_readi", errno: EPIPE)) {
            try negatedErrnoCall("snd_pcm_readi") { -Int(EPIPE) }
        }
        // Forced failures reach this convention too.
        SystemCallMocking.withMocking { driver in
            driver.forcedErrno = .counted(errno: ENODEV, count: 1)
            #expect(throws: SystemCallError(call: "snd_pcm_avail_update", errno: ENODEV)) {
                try negatedErrnoCall("snd_pcm_avail_update") { 0 }
            }
        }
    }

    @Test func aFailedMappingIsAnErrorNotAnAddress() {
        #expect(throws: SystemCallError(call: "mmap", errno: EBADF)) {
            try Posix.mmap(length: 4096, protection: PROT_READ, flags: MAP_SHARED, fd: -1, offset: 0)
        }
    }

    /// Mocking belongs to the thread that turned it on: a test forcing
    /// failures does not break calls other threads make meanwhile.
    @Test func mockingStaysOnItsThread() throws {
        try SystemCallMocking.withMocking { (driver) throws in
            driver.forcedErrno = .always(errno: EIO)
            // nonisolated(unsafe): written by the thread before it signals `finished`, read here after the wait.
            nonisolated(unsafe) var elsewhere: Result<Glibc.stat, SystemCallError>?
            let finished = DispatchSemaphore(value: 0)
            Thread {
                elsewhere = Result { () throws(SystemCallError) in try Posix.stat("/") }
                finished.signal()
            }.start()
            finished.wait()
            #expect(throws: Never.self) { try elsewhere?.get() }
            #expect(throws: SystemCallError(call: "stat(/)", errno: EIO)) { try Posix.stat("/") }
            #expect(driver.trace == ["stat(/)"])
            // Nested mocking has its own driver, and the outer one comes back.
            SystemCallMocking.withMocking { inner in
                #expect(inner !== driver)
                #expect(SystemCallMocking.current === inner)
            }
            #expect(SystemCallMocking.current === driver)
        }
        #expect(SystemCallMocking.current == nil)
    }

    /// The kernel node makes each streaming request through the one ioctl
    /// path, under its own name; once closed it refuses without touching
    /// the descriptor (whose number may belong to another file by then).
    @Test func kernelStreamingRequestsGoThroughTheWrapperByName() throws {
        let pipe = try Posix.nonBlockingPipe()
        defer { try? Posix.close(pipe.writeEnd) }
        let node = KernelV4L2Node(path: "/dev/not-a-camera", descriptor: V4L2Descriptor(fd: pipe.readEnd, throughLibv4l2: false))
        SystemCallMocking.withMocking { driver in
            _ = try? node.setPriority(.record)
            _ = try? node.setCaptureFormat(V4L2CaptureFormat(pixelFormat: FourCC("YUYV")!.code, width: 64, height: 48))
            _ = try? node.setFrameInterval(Fraction(1, 30))
            _ = try? node.captureFormat()
            _ = try? node.requestBuffers(count: 4)
            _ = try? node.queryBuffer(index: 0)
            _ = try? node.queueBuffer(index: 0)
            _ = try? node.streamOn()
            #expect(throws: SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: ENOTTY)) { try node.dequeueBuffer() }
            _ = try? node.streamOff()
            #expect(driver.trace == ["ioctl(VIDIOC_S_PRIORITY)", "ioctl(VIDIOC_S_FMT)", "ioctl(VIDIOC_S_PARM)", "ioctl(VIDIOC_G_FMT)",
                                     "ioctl(VIDIOC_REQBUFS)", "ioctl(VIDIOC_QUERYBUF)", "ioctl(VIDIOC_QBUF)", "ioctl(VIDIOC_STREAMON)",
                                     "ioctl(VIDIOC_DQBUF)", "ioctl(VIDIOC_STREAMOFF)"])
        }
        #expect(node.bufferPollTarget == PollTarget(descriptor: pipe.readEnd, events: Int16(POLLIN)))
        #expect(!node.nodeExists)
        node.close()
        SystemCallMocking.withMocking { driver in
            #expect(throws: SystemCallError(call: "ioctl(VIDIOC_DQBUF)", errno: EBADF)) { try node.dequeueBuffer() }
            #expect(driver.trace.isEmpty)
        }
    }
}
