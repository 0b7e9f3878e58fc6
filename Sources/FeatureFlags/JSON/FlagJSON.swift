package import Foundation

/// JSON in and out for ``FlagValue``, without Foundation's number guessing.
package enum FlagJSON {
    /// The default nesting limit: deep enough for real payloads, too shallow to exhaust the stack.
    package static let defaultMaxDepth = 64

    /// Parses one JSON document; throws ``FlagJSONError`` locating the first problem.
    package static func parse(_ bytes: some Sequence<UInt8>, maxDepth: Int = defaultMaxDepth) throws(FlagJSONError) -> FlagValue {
        let result: Result<FlagValue, FlagJSONError>? = bytes.withContiguousStorageIfAvailable { buffer in
            parseBuffer(buffer, maxDepth: maxDepth)
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { parseBuffer($0, maxDepth: maxDepth) }.get()
    }

    /// Parses one JSON document held in `bytes`; non-generic (as below) so other modules never run it unspecialised.
    package static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = defaultMaxDepth) throws(FlagJSONError) -> FlagValue {
        try bytes.withUnsafeBufferPointer { parseBuffer($0, maxDepth: maxDepth) }.get()
    }

    /// Parses one JSON document held in `bytes`.
    package static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(FlagJSONError) -> FlagValue {
        try parse(bytes[...], maxDepth: maxDepth)
    }

    /// Parses one JSON document held in `data`.
    package static func parse(_ data: Data, maxDepth: Int = defaultMaxDepth) throws(FlagJSONError) -> FlagValue {
        let result = data.withUnsafeBytes { raw in
            parseBuffer(raw.bindMemory(to: UInt8.self), maxDepth: maxDepth)
        }
        return try result.get()
    }

    /// Parses one JSON document held in `text`.
    package static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(FlagJSONError) -> FlagValue {
        try parse(Array(text.utf8), maxDepth: maxDepth)
    }

    private static func parseBuffer(_ buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int) -> Result<FlagValue, FlagJSONError> {
        var parser = JSONParser(bytes: buffer, maxDepth: maxDepth)
        do throws(FlagJSONError) {
            return .success(try parser.parseDocument())
        } catch {
            return .failure(error.located(in: buffer))
        }
    }

    /// Compact JSON bytes. With `sortedKeys` the output is canonical: equal values give equal bytes.
    package static func bytes(_ value: FlagValue, sortedKeys: Bool = false) -> [UInt8] {
        var writer = JSONWriter(sortedKeys: sortedKeys)
        writer.write(value)
        return writer.bytes
    }

    /// Compact JSON text.
    package static func string(_ value: FlagValue, sortedKeys: Bool = false) -> String {
        String(decoding: bytes(value, sortedKeys: sortedKeys), as: UTF8.self)
    }
}
