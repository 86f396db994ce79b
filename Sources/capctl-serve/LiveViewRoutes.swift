import CapctlCommands
import CapctlService
import CaptureKit
import Hummingbird
import NIOCore
import NIOHTTPTypes

extension ServiceRouter {
    /// The multipart boundary of `/stream.mjpg`.
    static let frameBoundary = "capctl-frame"

    /// `GET /stream.mjpg`: a camera's live view as MJPEG over HTTP
    /// (multipart/x-mixed-replace, as browsers' <img>, ffmpeg, VLC and
    /// OpenCV read it); `GET /snapshot.jpg`: its newest picture.
    static func addLiveViewRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing) {
        router.get("stream.mjpg") { request, context in
            let viewer = try service.watch(query(request))
            // A client that hangs up frees its place now, not at the view's next picture (a minute away at fps=1/60).
            context.channel.closeFuture.whenComplete { _ in viewer.close() }
            // An HTTP/2 stream shares its connection's socket with the page's other requests: its own
            // flow-control window, not the socket's buffer, bounds it, and HTTP/2 has no Connection header.
            let isStream = context.isHTTP2Stream
            var headers: HTTPFields = [
                .contentType: "multipart/x-mixed-replace; boundary=\(frameBoundary)",
                .cacheControl: "no-store, no-cache, must-revalidate",
            ]
            if !isStream {
                // What waits in the kernel for a slow viewer is what it sees late: a small send buffer keeps
                // its pictures fresh (it misses some instead), and shows a stalled viewer at once.
                try? await context.channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: sendBufferSize).get()
                headers[.connection] = "close"
            }
            let channel = context.channel
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { viewer.close() }
                // A link that expires, or a credential taken away, ends the view.
                let watch = Task { await context.accessEnded(); viewer.close() }
                defer { watch.cancel() }
                // Each picture goes from the view's thread to the connection's event loop, as one buffer
                // made once for every viewer: this task does not wake for it (with fifty viewers, that
                // and a copy of each picture per viewer cost a sixth of what the view cost beyond its first
                // viewer). The head is written by now; the parts pass through the connection's HTTP
                // encoder as the writer's would, and the end comes after them (once `ended()` returns,
                // no picture is on its way: the event loop runs what it is given in order). A
                // connection whose buffers are full misses the picture (counted as dropped), as a slow
                // `next()` would. Always through `execute`: a write made inline could close the channel
                // and call `viewer.close()` under the viewer's lock, where the sink runs.
                viewer.deliver { picture in
                    guard channel.isWritable else { return false }
                    let part = picture.wireForm.value { MJPEGPart(picture) }
                    channel.eventLoop.execute { channel.writeAndFlush(HTTPResponsePart.body(part.buffer), promise: nil) }
                    return true
                }
                await viewer.ended()
                try await writer.finish(nil)
            })
        }
        router.get("snapshot.jpg") { request, _ in
            let picture = try await service.snapshot(query(request))
            let headers: HTTPFields = [
                .contentType: "image/jpeg", .contentLength: String(picture.jpeg.count), .cacheControl: "no-store",
                timestampField: EventTime.unixSeconds(ofCaptureTime: picture.captureTime),
            ]
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: picture.jpeg)))
        }
    }

    /// A stream's socket send buffer (the kernel doubles it): about 8 pictures of 640x360 at quality 75.
    static let sendBufferSize: SocketOptionValue = 128 * 1024

    /// When a picture's frame was captured (seconds since 1970, UTC), as MJPEG servers send it.
    private static let timestampField = HTTPFields.Element.Name("X-Timestamp")!

    /// One part of the stream: its headers (with when the frame was captured, in seconds since 1970), the JPEG and the line after it.
    struct MJPEGPart: Sendable {
        let buffer: ByteBuffer

        init(_ picture: LiveViewFrame) {
            let head = "--\(frameBoundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(picture.jpeg.count)\r\n"
                + "X-Timestamp: \(EventTime.unixSeconds(ofCaptureTime: picture.captureTime))\r\nX-Frame: \(picture.sequence)\r\n\r\n"
            var buffer = ByteBuffer()
            buffer.reserveCapacity(head.utf8.count + picture.jpeg.count + 2)
            buffer.writeString(head)
            buffer.writeBytes(picture.jpeg)
            buffer.writeString("\r\n")
            self.buffer = buffer
        }
    }

    /// A request's query parameters (the last of each name).
    static func query(_ request: Request) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { values[String(name)] = String(value) }
        return values
    }
}
