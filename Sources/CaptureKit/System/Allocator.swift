#if canImport(Glibc)
import Glibc
#endif

/// The C library's allocator, tuned for a process that runs for months and
/// makes and frees large blocks (frames, encoders' pictures) all the time:
/// `capctl serve`. `<malloc.h>` is not part of the Glibc module, so its
/// functions are looked up in the C library.
package enum Allocator {
    /// Large blocks (at least `bytes`) are mapped and unmapped for each
    /// allocation, never kept in a heap once freed. By default glibc raises
    /// this threshold to the size of each large block freed (up to 32 MiB),
    /// after which a frame-sized block comes from a heap, where what is freed
    /// stays resident: with one camera (640x480), one recording and one viewer
    /// of its live view, `capctl serve` held 144 MiB after 80 s, and 100 MiB with
    /// the threshold fixed at 128 KiB, at the same CPU time (16.8% of a core).
    package static func mapBlocks(ofAtLeast bytes: Int32) {
        #if canImport(Glibc)
        typealias SetOption = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mmapThreshold: Int32 = -3  // M_MMAP_THRESHOLD
        _ = unsafeBitCast(symbol, to: SetOption.self)(mmapThreshold, bytes)
        #endif
    }

    /// Gives freed memory held in the heaps back to the system
    /// (`malloc_trim(0)`). glibc keeps freed memory in its arenas (one per
    /// thread at first, 16 on two cores) and returns only what lies at the top
    /// of a heap: the large buffers a recording's encoders free in the middle
    /// of one stay resident. Meant for the end of a recording, never per frame.
    package static func returnFreedMemory() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }
}
