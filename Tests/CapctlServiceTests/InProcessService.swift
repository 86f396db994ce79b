@testable import capctl_serve
@testable import CapctlCommands
import CapctlService
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// A service's router in this process, over the real `CaptureService` (the
/// test pattern and tone) or any other `CaptureServing`, reached through
/// Hummingbird's own test client: no socket, no process, no sleep.
struct InProcessService {
    let folder: String
    let accessLogPath: String
    let configuration: ServiceConfiguration

    /// A service configured as `capctl serve ARGUMENTS --dir FOLDER` would be, in a new folder.
    init(_ arguments: [String] = ["--video", "test-pattern", "--audio", "test-tone"], token: String? = nil) throws {
        folder = NSTemporaryDirectory() + "capctl-inprocess-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        accessLogPath = folder + "-access.log"
        var words = arguments + ["--dir", folder]
        if let token {
            let tokenFile = folder + "-token"
            try #require(FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]))
            words += ["--token-file", tokenFile]
        }
        configuration = try ServiceConfiguration(command: Capctl.Serve.parse(words))
    }

    /// Runs `test` against the router over `service`.
    func test<Value: Sendable>(_ service: any CaptureServing, _ test: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        let access = try AccessControl(AccessControl.Settings(token: configuration.token, accessFilePath: configuration.accessFilePath,
                                                              linkKeyPath: configuration.linkKeyPath))
        let router = ServiceRouter.make(service: service, configuration: configuration, access: access, accessLog: try AccessLog(path: accessLogPath))
        let application = Application(router: router)
        return try await application.test(.router, test)
    }

    /// Runs `test` against the router over a real `CaptureService` of this configuration, shut down after.
    func test<Value: Sendable>(_ test: @Sendable (any TestClientProtocol, CaptureService) async throws -> Value) async throws -> Value {
        let service = try CaptureService(configuration: configuration)
        defer { service.shutdown() }
        return try await self.test(service) { client in try await test(client, service) }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: folder)
        try? FileManager.default.removeItem(atPath: accessLogPath)
        try? FileManager.default.removeItem(atPath: folder + "-token")
    }

    /// The headers of a request: JSON for a body, and `extra`. (Hummingbird's test
    /// client names the host as the request's authority, `localhost`.)
    static func headers(json: Bool = false, _ extra: HTTPFields = [:]) -> HTTPFields {
        var fields: HTTPFields = [:]
        if json { fields[.contentType] = "application/json" }
        fields.append(contentsOf: extra)
        return fields
    }
}

extension TestResponse {
    /// The body as a JSON object.
    var object: [String: Any] {
        get throws {
            let value = try JSONSerialization.jsonObject(with: Data(body.readableBytesView))
            return try #require(value as? [String: Any], "not a JSON object: \(String(buffer: body))")
        }
    }

    /// The one-line reason of a refusal (`{"error": …}`).
    var error: String { (try? object["error"] as? String) ?? String(buffer: body) }
}

extension TestClientProtocol {
    /// GETs `uri` every 20 ms until its JSON object satisfies `condition`, for at most
    /// `seconds` (a bound on a hang on a starved machine, not a timing); answers that object, or nil.
    func poll(_ uri: String, seconds: Double = 60, until condition: ([String: Any]) -> Bool) async throws -> [String: Any]? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let object = try await send(.get, uri).object
            if condition(object) { return object }
            try await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// A request (with a JSON body, if any); answers the response.
    func send(_ method: HTTPRequest.Method, _ uri: String, json: String? = nil, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        try await execute(uri: uri, method: method, headers: InProcessService.headers(json: json != nil, extra),
                          body: json.map { ByteBuffer(string: $0) })
    }
}
