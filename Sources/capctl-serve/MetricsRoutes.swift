import CapctlCommands
import CapctlService
import Hummingbird

extension ServiceRouter {
    /// `GET /metrics`: the service's metrics in Prometheus's text format
    /// (0.0.4), under the same Host and token rules as every request; the
    /// numbers come from `CaptureService.metricsExposition()`, and the
    /// responses so far by status from the access log.
    static func addMetricsRoutes(to router: Router<ServiceRequestContext>, service: any CaptureServing, access: AccessControl, accessLog: AccessLog) {
        router.get("metrics") { _, _ in
            var metrics = service.metricsExposition()
            for (status, count) in accessLog.responsesByStatus {
                metrics.add("capctl_http_requests_total", .counter, help: "HTTP responses the service has given, by status code.",
                            labels: [("code", String(status))], value: count)
            }
            for (reason, count) in access.refusalsByReason {
                metrics.add("capctl_http_refusals_total", .counter,
                            help: "Requests refused on access grounds, by reason: no-credential, unknown-credential, bad-link, expired-link (401); role, camera, host, origin (403).",
                            labels: [("reason", reason)], value: count)
            }
            let headers: HTTPFields = [.contentType: PrometheusExposition.contentType, .cacheControl: "no-store"]
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: metrics.text)))
        }
    }
}
