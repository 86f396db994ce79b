/// Inputs whose tracks are alternates of each other, such as two
/// microphones recorded side by side: players play one, the default.
public final class AssetWriterInputGroup: Sendable {
    public let inputs: [AssetWriterInput]
    /// The input whose track is enabled; the others are disabled.
    public let defaultInput: AssetWriterInput?

    public init(inputs: [AssetWriterInput], defaultInput: AssetWriterInput?) {
        self.inputs = inputs
        self.defaultInput = defaultInput
    }
}
