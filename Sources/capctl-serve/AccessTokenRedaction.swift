/// A request target as it may be written down: the value of every
/// `access_token` and `link` query parameter replaced by `REDACTED`, so that no log holds
/// a secret (a GET may carry one in its query, as a browser's EventSource sends no
/// headers) or a view link that has not expired.
enum AccessTokenRedaction {
    static let placeholder = "REDACTED"

    /// `target` (path and query) with each `access_token` value redacted;
    /// the rest, the order of its parameters included, as it came.
    static func redacting(_ target: String) -> String {
        guard let question = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: question)...]
        let parameters = query.split(separator: "&", omittingEmptySubsequences: false).map { parameter -> Substring in
            guard let equals = parameter.firstIndex(of: "="), isTokenName(parameter[..<equals]) else { return parameter }
            return parameter[...equals] + placeholder
        }
        return target[...question] + parameters.joined(separator: "&")
    }

    /// Whether a parameter's name is `access_token` or `link`, however it is spelled:
    /// percent-encoded or in capitals, it may still be someone's token.
    private static func isTokenName(_ name: Substring) -> Bool {
        let decoded = (try? PercentDecoding.decode(name)) ?? String(name)
        return ["access_token", "link"].contains(decoded.lowercased())
    }
}
