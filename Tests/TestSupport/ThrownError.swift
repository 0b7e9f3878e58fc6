/// The error `body` threw when it is an `E`; nil when it threw nothing or something else.
/// (`#expect(throws:)` returns the error only from Swift Testing 6.1 on, and the tests build
/// with Swift 6.0 too: `.ci/oldest-swift`.)
package func thrownError<E: Error>(_ type: E.Type, _ body: () throws -> Void) -> E? {
    do {
        try body()
    } catch {
        return error as? E
    }
    return nil
}
