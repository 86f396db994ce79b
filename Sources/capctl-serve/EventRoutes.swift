import CapctlCommands
import CapctlService
import FoundationEssentials
import Hummingbird

extension ServiceRouter {
    /// `GET /events`: every event from now on as Server-Sent Events, each a
    /// `data:` line of the JSON stdout carries, named by its `event` field.
    static func addEventRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.get("events") { _, context in
            let stream = service.events.subscribe()
            var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
            if !context.isHTTP2Stream { headers[.connection] = "keep-alive" }
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                // Events, and every 15 s a comment: a client that has gone is
                // found out (its write fails) even while nothing happens.
                let (items, feed) = AsyncStream<String?>.makeStream(bufferingPolicy: .bufferingNewest(ServiceEvents.backlog))
                let forward = Task {
                    for await line in stream { feed.yield(line) }
                    feed.finish()
                }
                let heartbeat = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(15))
                        feed.yield(nil)
                    }
                }
                // A credential taken away (or a link's end) ends the stream.
                let watch = Task {
                    await context.accessEnded()
                    if !Task.isCancelled { feed.finish() }
                }
                defer {
                    forward.cancel()
                    heartbeat.cancel()
                    watch.cancel()
                }
                // A first comment, so that a client sees the stream open before any event.
                try await writer.write(ByteBuffer(string: ": capctl events\n\n"))
                for await item in items {
                    if let line = item {
                        try await writer.write(ByteBuffer(string: "event: \(eventName(line))\ndata: \(line)\n\n"))
                    } else {
                        try await writer.write(ByteBuffer(string: ": keepalive\n\n"))
                    }
                }
                try await writer.finish(nil)
            })
        }
    }

    /// The value of a JSON line's `"event"` key (the events' encoder writes it as `"event":"name"`).
    static func eventName(_ line: String) -> String {
        guard let key = line.firstRange(of: "\"event\":\"") else { return "message" }
        let rest = line[key.upperBound...]
        return String(rest.prefix { $0 != "\"" })
    }
}
