@testable import CaptureKit
import Foundation
import Synchronization
import Testing

/// SystemThread.join(): every caller returns once the thread has ended.
@Suite struct SystemThreadTests {
    @Test func aSecondJoinerWaitsForTheThreadToo() throws {
        let ended = Atomic<Bool>(false)
        let thread = try SystemThread(name: "slow") {
            usleep(300_000)
            ended.store(true, ordering: .releasing)
        }
        let sawEnd = Atomic<Int>(0)
        let joiners = (0..<3).map { _ in
            Thread {
                thread.join()
                if ended.load(ordering: .acquiring) { sawEnd.add(1, ordering: .relaxed) }
            }
        }
        joiners.forEach { $0.start() }
        thread.join()
        let endedWhenJoined = ended.load(ordering: .acquiring)
        #expect(endedWhenJoined)
        while joiners.contains(where: { !$0.isFinished }) { usleep(10_000) }
        let joinersThatSawTheEnd = sawEnd.load(ordering: .relaxed)
        #expect(joinersThatSawTheEnd == 3, "every joiner returned after the thread ended")
    }
}
