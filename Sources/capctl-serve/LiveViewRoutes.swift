import CapctlCommands
import CaptureKit
import Hummingbird

extension ServiceRouter {
    /// The multipart boundary of `/stream.mjpg`.
    static let frameBoundary = "capctl-frame"

    /// `GET /stream.mjpg`: a camera's live view as MJPEG over HTTP
    /// (multipart/x-mixed-replace, as browsers' <img>, ffmpeg, VLC and
    /// OpenCV read it); `GET /snapshot.jpg`: its newest picture.
    static func addLiveViewRoutes(to router: Router<ServiceRequestContext>, service: CaptureService) {
        router.get("stream.mjpg") { request, _ in
            let viewer = try service.watch(query(request))
            let headers: HTTPFields = [
                .contentType: "multipart/x-mixed-replace; boundary=\(frameBoundary)",
                .cacheControl: "no-store, no-cache, must-revalidate", .connection: "close",
            ]
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                defer { viewer.close() }
                // A client that goes makes the next write fail, or cancels the task waiting in next().
                while let picture = await viewer.next() {
                    try await writer.write(part(picture))
                }
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

    /// When a picture's frame was captured (seconds since 1970, UTC), as MJPEG servers send it.
    private static let timestampField = HTTPFields.Element.Name("X-Timestamp")!

    /// One part of the stream: its headers (with when the frame was captured, in seconds since 1970), the JPEG and the line after it.
    private static func part(_ picture: LiveViewFrame) -> ByteBuffer {
        let head = "--\(frameBoundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(picture.jpeg.count)\r\n"
            + "X-Timestamp: \(EventTime.unixSeconds(ofCaptureTime: picture.captureTime))\r\nX-Frame: \(picture.sequence)\r\n\r\n"
        var buffer = ByteBuffer()
        buffer.reserveCapacity(head.utf8.count + picture.jpeg.count + 2)
        buffer.writeString(head)
        buffer.writeBytes(picture.jpeg)
        buffer.writeString("\r\n")
        return buffer
    }

    /// A request's query parameters (the last of each name).
    static func query(_ request: Request) -> [String: String] {
        var values: [String: String] = [:]
        for (name, value) in request.uri.queryParameters { values[String(name)] = String(value) }
        return values
    }
}
