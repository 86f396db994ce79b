import CapctlCommands
#if canImport(Glibc)
import Glibc
#endif

// Large blocks (frames, encoders' pictures) are mapped and unmapped by the C library for each
// allocation, never kept in its heaps. By default glibc raises this threshold to the size of
// each large block freed (up to 32 MiB), after which a frame-sized block comes from a heap,
// where what is freed stays resident: with one camera (640x480), one recording and one viewer
// of its live view the service held 144 MiB after 80 s, 100 MiB with the threshold fixed, at
// the same CPU time (16.8% of a core either way). <malloc.h> is not part of the Glibc module:
// mallopt is looked up in the C library. (Each recording's end also trims the heaps:
// ServiceRecording.returnFreedMemory.)
#if canImport(Glibc)
if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") {
    typealias SetOption = @convention(c) (Int32, Int32) -> Int32
    let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
    _ = unsafeBitCast(symbol, to: SetOption.self)(mmapThreshold, 128 * 1024)
}
#endif

// The command line, with `serve` running its server in this process.
CapctlCommandLine.main(hosting: HTTPServiceHost())
