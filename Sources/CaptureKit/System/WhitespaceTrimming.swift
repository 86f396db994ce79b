extension StringProtocol {
    /// The text without the spaces, tabs and line ends around it: what
    /// Foundation's `trimmingCharacters(in: .whitespacesAndNewlines)` gives,
    /// which is not in FoundationEssentials (the only Foundation capctl links).
    /// For the command line too, hence `package`.
    package func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0.isWhitespace }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
