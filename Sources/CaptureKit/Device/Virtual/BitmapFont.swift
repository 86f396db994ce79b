/// A 5x7 bitmap font of the ten digits, for drawing frame counters.
enum BitmapFont {
    static let columns = 5
    static let rows = 7

    /// Each digit's rows, top first; bit 4 is the leftmost column.
    static let digits: [[UInt8]] = [
        [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110], // 0
        [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110], // 1
        [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111], // 2
        [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110], // 3
        [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010], // 4
        [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110], // 5
        [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110], // 6
        [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000], // 7
        [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110], // 8
        [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100], // 9
    ]

    /// Whether the pixel at `column`, `row` of `digit` is lit.
    static func isLit(_ digit: Int, column: Int, row: Int) -> Bool {
        digits[digit][row] >> (columns - 1 - column) & 1 == 1
    }

    /// The digit whose bitmap matches `lit` exactly, or nil.
    static func digit(matching lit: (_ column: Int, _ row: Int) -> Bool) -> Int? {
        digits.indices.first { digit in
            (0..<rows).allSatisfy { row in (0..<columns).allSatisfy { column in isLit(digit, column: column, row: row) == lit(column, row) } }
        }
    }
}
