import CapctlCommands
import CapctlService
import CaptureKit

// Frames and encoders' pictures are mapped and unmapped for each allocation, never kept in
// the C library's heaps once freed, where they would stay resident for months (see
// Allocator.mapBlocks; each recording's end also trims the heaps: ServiceRecording.finish).
Allocator.mapBlocks(ofAtLeast: 128 * 1024)

// The command line, with `serve` running its server in this process.
CapctlCommandLine.main(hosting: HTTPServiceHost())
