import CapctlCommands
import CaptureKit
import FoundationEssentials
import Synchronization

/// The service's events: each goes to stdout as one JSON line, and to every
/// client of `GET /events`, in the same order.
package final class ServiceEvents: Sendable {
    private struct Subscribers {
        var next = 0
        var streams: [Int: AsyncStream<String>.Continuation] = [:]
        var closed = false
    }
    /// Held while a line is printed and handed out, so that every reader sees one order.
    private let subscribers = Mutex(Subscribers())
    /// How many events a slow reader may fall behind before the oldest it has not read are dropped.
    package static let backlog = 1024

    package init() {}

    /// Publishes one event (an Encodable with an `event` key).
    package func publish<T: Encodable>(_ event: T) {
        guard let line = try? JSONOutput.line(event) else { return }
        subscribers.withLock { state in
            JSONOutput.writeLine(line)
            for continuation in state.streams.values { continuation.yield(line) }
        }
    }

    /// Every event from now on, one JSON line each, until `close()` or the
    /// reader stops; a reader more than `backlog` events behind loses the oldest.
    package func subscribe() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(Self.backlog))
        let id = subscribers.withLock { state -> Int? in
            guard !state.closed else { return nil }
            defer { state.next += 1 }
            state.streams[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every reader's stream (the service is stopping).
    package func close() {
        let streams = subscribers.withLock { state in
            state.closed = true
            defer { state.streams = [:] }
            return Array(state.streams.values)
        }
        for continuation in streams { continuation.finish() }
    }
}

/// Where one recording's events go: the service's events, each carrying `recording`.
struct EventSink: RecordingEventSink {
    let recording: String
    let events: ServiceEvents

    func send<T: Encodable>(_ event: T) {
        events.publish(TaggedEvent(tag: ("recording", recording), event: event))
    }
}

/// An event with the id of what it concerns (`recording`, `camera`) added to the same JSON object.
struct TaggedEvent<Event: Encodable>: Encodable {
    /// The key and the id.
    let tag: (key: String, id: String)
    let event: Event

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        try event.encode(to: encoder)
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(tag.id, forKey: Key(stringValue: tag.key))
    }
}
