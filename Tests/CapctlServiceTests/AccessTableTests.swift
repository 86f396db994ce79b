@testable import capctl_serve
import CapctlCommands
import CapctlService
import Foundation
import Hummingbird
import Testing

/// The access checks' table of operations, generated from the OpenAPI document, against the router:
/// every route the service serves is an operation the table names (with the role it needs), and
/// every operation of the table is served, so that no route is left without its check.
@Suite struct AccessTableTests {
    @Test func everyRouteIsAnOperationWithItsRoleAndEveryOperationIsARoute() throws {
        let service = try InProcessService()
        defer { service.remove() }
        let captureService = try CaptureService(configuration: service.configuration)
        defer { captureService.shutdown() }
        let access = try AccessControl(AccessControl.Settings())
        let router = ServiceRouter.make(service: captureService, configuration: service.configuration, access: access,
                                        accessLog: try AccessLog(path: service.accessLogPath))
        let operations = OpenAPIDocument.operations
        var served = Set<String>()
        for route in router.routes {
            // Hummingbird writes a parameter as ":name"; the document as "{name}".
            let path = "/" + route.path.components.map { element in
                let text = "\(element)"
                return text.hasPrefix(":") ? "{\(text.dropFirst())}" : text
            }.joined(separator: "/")
            // "**" (the rest of the path) is a last parameter that takes the rest.
            let operation = operations.first { operation in
                operation.method == route.method.rawValue
                    && (operation.path == path || (path.hasSuffix("/**") && operation.lastParameterTakesRest
                        && operation.path.hasPrefix(path.dropLast(2)) && !operation.path.dropFirst(path.count - 2).contains("/")))
            }
            #expect(operation != nil, "\(route.method) \(path) is served but not in openapi.json with an x-capctl-role")
            served.insert("\(route.method.rawValue) \(operation?.path ?? path)")
        }
        for operation in operations where operation.method != "HEAD" {
            #expect(served.contains("\(operation.method) \(operation.path)"), "\(operation.operationID) is documented but not served")
        }
    }

    @Test func aFileInASubfolderIsTheFileOperation() throws {
        let found = try #require(OpenAPIDocument.operations.operation(method: "DELETE", path: "/files/day/clip.mp4"))
        #expect(found.0.operationID == "deleteFile" && found.0.role == .admin)
        #expect(found.1["name"] == "day/clip.mp4")
        #expect(OpenAPIDocument.operations.operation(method: "GET", path: "/devices/0/controls/extra") == nil)
    }

    @Test func rolesAllowWhatTheDocumentSays() {
        #expect(AccessRole.admin.allows(.admin) && AccessRole.admin.allows(.record) && AccessRole.admin.allows(.control))
        #expect(AccessRole.record.allows(.view) && AccessRole.control.allows(.view))
        #expect(!AccessRole.view.allows(.record) && !AccessRole.record.allows(.control) && !AccessRole.control.allows(.record))
        #expect(!AccessRole.record.allows(.admin) && !AccessRole.control.allows(.admin))
    }
}
