import Hummingbird
import NIOCore

/// What a handler knows of its request besides the request itself: the
/// router's parameters and the client's address (for the access log).
struct ServiceRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Request bodies are small JSON documents.
    var maxUploadSize: Int { 64 * 1024 }
}
