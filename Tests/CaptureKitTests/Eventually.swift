import Foundation

/// Waits (up to 10 s, a bound for a hung test, not a timing) until
/// `condition` holds; false if it never did.
func eventually(_ condition: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: 10)
    while !condition() {
        if Date() > deadline { return false }
        usleep(5_000)
    }
    return true
}
