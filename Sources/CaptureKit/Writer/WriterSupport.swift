#if canImport(Glibc)
import Glibc
#endif

/// One item of metadata for the file: a key and its text, like an
/// AVMetadataItem. The common keys have constructors; any other key is
/// written where the container allows arbitrary keys (MP4 and QuickTime as
/// 'mdta' keys, Matroska and WebM as tags, FLAC and Ogg as comments).
public struct MetadataItem: Sendable, Hashable {
    public var key: String
    public var value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }

    public static func title(_ value: String) -> MetadataItem { MetadataItem(key: "title", value: value) }
    public static func comment(_ value: String) -> MetadataItem { MetadataItem(key: "comment", value: value) }
    /// The device's maker.
    public static func make(_ value: String) -> MetadataItem { MetadataItem(key: "make", value: value) }
    /// The device's model.
    public static func model(_ value: String) -> MetadataItem { MetadataItem(key: "model", value: value) }
    /// When the recording was made, in ISO 8601 (`2024-05-01T12:00:00Z`).
    public static func creationDate(_ iso8601: String) -> MetadataItem { MetadataItem(key: "creation_time", value: iso8601) }

    /// The keys every container writes in its own fields.
    static let commonKeys: Set<String> = ["title", "comment", "creation_time"]
}
