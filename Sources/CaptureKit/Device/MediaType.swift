/// The kind of media a capture device delivers.
public enum MediaType: String, Sendable, Codable, CaseIterable {
    case video
    case audio
}
