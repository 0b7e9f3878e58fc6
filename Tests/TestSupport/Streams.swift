/// The first `count` elements of `stream`.
package func first<S: AsyncSequence & Sendable>(_ count: Int, of stream: S) async -> [S.Element] where S.Element: Sendable {
    var out: [S.Element] = []
    var iterator = stream.makeAsyncIterator()
    while out.count < count, let next = try? await iterator.next() { out.append(next) }
    return out
}
