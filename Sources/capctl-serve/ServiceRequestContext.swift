import CapctlService
import Hummingbird
import NIOCore

/// What a handler knows of its request besides the request itself: the
/// router's parameters, the client's address (for the access log) and its connection's end.
struct ServiceRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection: an endless answer (a live view) learns from its
    /// `closeFuture` at once that its client has gone, and sets its socket's options.
    let channel: any Channel
    /// Who the request is and what it may do, as `AccessMiddleware` found; until then nothing.
    var access = AccessGrant(name: "nobody", role: .view, cameras: [])
    /// The service's access control, which counts a refusal a handler makes.
    var accessControl: AccessControl?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    /// Whether the request came on a stream of an HTTP/2 connection, which shares its socket with
    /// the connection's other streams and has no `Connection` header. (An accepted connection's
    /// parent is the listening socket; an HTTP/2 stream's parent is its connection.)
    var isHTTP2Stream: Bool { channel.parent?.parent != nil }

    /// Request bodies are small JSON documents.
    var maxUploadSize: Int { 64 * 1024 }
}
