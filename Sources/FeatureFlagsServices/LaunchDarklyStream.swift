package import FeatureFlags

/// LaunchDarkly's mobile stream read as a ``StreamEventFormat``: `put` replaces every flag,
/// `patch` and `delete` change one (a version no newer than the one held changes nothing),
/// `ping` asks the polling endpoint. Each connection's reader keeps what the stream gave since
/// its `put`, and hands the provider every value as of each event — in the polling answer's
/// shape, which the endpoint's `decode(streamed:for:)` reads. A `patch` or `delete` before any
/// `put`, or values that outgrow the answers' cap, ask the polling endpoint instead.
extension StreamEventFormat {
    /// LaunchDarkly's mobile stream: `put`, `patch`, `delete`, `ping`.
    package static let launchDarkly = StreamEventFormat(name: "launchdarkly", sendsValuesOnConnect: true) { maxBytes in
        LaunchDarklyStreamReader(maxBytes: maxBytes)
    }
}

/// Reads one connection of a LaunchDarkly stream (see ``StreamEventFormat/launchDarkly``).
package struct LaunchDarklyStreamReader: StreamEventReader {
    /// What the connection gave since its last `put`; nil before it (or after the values
    /// outgrew ``maxBytes``, until the next `put`).
    package private(set) var document: StreamedDocument?
    /// The most the document may weigh as JSON.
    let maxBytes: Int

    /// A reader whose document may weigh up to `maxBytes`.
    package init(maxBytes: Int) { self.maxBytes = maxBytes }

    /// `put`, `patch`, `delete` with their JSON data, and `ping`; nil for any other name
    /// (ignored, as LaunchDarkly's SDKs do) and for a change no newer than what is held.
    package mutating func read(_ event: ServerSentEvent) -> StreamEvent? {
        switch event.type {
        case "ping": return .fetch(via: "ping")
        case "put", "patch", "delete": break
        default: return nil
        }
        let value: FlagValue
        do {
            value = try FlagJSON.parse(Array(event.data.utf8))
        } catch {
            return .malformed(event: event.type, reason: "its data is not JSON: \(error.description)")
        }
        let values: StreamedValues
        switch StreamedValues.read(event: event.type, data: value) {
        case .success(let read): values = read
        case .failure(let problem): return .malformed(event: event.type, reason: problem.reason)
        }
        if case .put = values { document = StreamedDocument() }
        guard var current = document else { return .fetch(via: values.event) }
        guard current.apply(values) else { return nil }
        guard current.bytes <= maxBytes else {
            // Grown past what an answer may weigh: the polling endpoint says what is current.
            document = nil
            return .fetch(via: values.event)
        }
        document = current
        return .values(current.flags, via: values.event)
    }
}

/// Flag values a stream carried, as LaunchDarkly's mobile stream sends them.
package enum StreamedValues: Sendable, Equatable {
    /// Every flag, replacing all (`put`: the polling answer's shape, `{key: flag}`).
    case put([String: FlagValue])
    /// One flag, as in a polling answer, with its environment version (`patch`).
    case patch(key: String, flag: [String: FlagValue], version: Int?)
    /// One flag removed, as of its environment version (`delete`).
    case delete(key: String, version: Int?)

    /// The event's name: `put`, `patch` or `delete`.
    package var event: String {
        switch self {
        case .put: return "put"
        case .patch: return "patch"
        case .delete: return "delete"
        }
    }

    /// Why an event's data was not read.
    package struct Problem: Error, Equatable {
        package let reason: String
    }

    /// Reads the JSON data of a `put`, `patch` or `delete` event.
    package static func read(event: String, data: FlagValue) -> Result<StreamedValues, Problem> {
        guard case .object(let object) = data else { return .failure(Problem(reason: "its data is \(data.typeNameWithArticle), expected an object")) }
        switch event {
        case "put":
            for (key, flag) in object {
                guard case .object = flag else { return .failure(Problem(reason: "flag \"\(key)\" is \(flag.typeNameWithArticle), expected an object")) }
            }
            return .success(.put(object))
        case "patch":
            guard case .string(let key)? = object["key"], !key.isEmpty else { return .failure(Problem(reason: "it names no flag (\"key\")")) }
            var flag = object
            flag["key"] = nil
            return .success(.patch(key: key, flag: flag, version: object["version"]?.intValue))
        case "delete":
            guard case .string(let key)? = object["key"], !key.isEmpty else { return .failure(Problem(reason: "it names no flag (\"key\")")) }
            return .success(.delete(key: key, version: object["version"]?.intValue))
        default:
            return .failure(Problem(reason: "\"\(event)\" carries no flag values"))
        }
    }
}

/// What a LaunchDarkly stream has given since its last `put`: the flag objects by key, and the
/// versions at which flags were deleted — so that a late `patch` older than the deletion does
/// not bring a flag back (LaunchDarkly's own SDKs keep the same "tombstones").
package struct StreamedDocument: Sendable, Equatable {
    /// The flags, in the polling answer's shape.
    package private(set) var flags: [String: FlagValue] = [:]
    /// Deleted flags' versions.
    package private(set) var deleted: [String: Int] = [:]
    /// About how many bytes the flags and the deletions take as JSON: what a polling answer
    /// with them would weigh. Every event is capped, but patches of new flags and deletions of
    /// distinct ones add up without end; the provider compares this with the answers' cap.
    package private(set) var bytes = 2
    /// Each flag's and deletion's share of ``bytes``.
    private var sizes: [String: Int] = [:]

    /// Nothing given yet.
    package init() {}

    /// Applies `values`; false when it changes nothing because the version held is as new or
    /// newer (a `put` always applies). Versions are compared only when both sides have one.
    package mutating func apply(_ values: StreamedValues) -> Bool {
        switch values {
        case .put(let all):
            flags = all
            deleted = [:]
            sizes = [:]
            bytes = 2
            for (key, flag) in all { account(key, Self.size(key, flag)) }
            return true
        case .patch(let key, let flag, let version):
            guard isNewer(version, than: key) else { return false }
            flags[key] = .object(flag)
            deleted[key] = nil
            account(key, Self.size(key, .object(flag)))
            return true
        case .delete(let key, let version):
            guard isNewer(version, than: key) else { return false }
            flags[key] = nil
            deleted[key] = version ?? deleted[key] ?? 0
            // A deletion is kept as its key and version.
            account(key, key.utf8.count + 24)
            return true
        }
    }

    /// Makes `size` the share of `key` in ``bytes``.
    private mutating func account(_ key: String, _ size: Int) {
        bytes += size - (sizes.updateValue(size, forKey: key) ?? 0)
    }

    /// The bytes of `"key":flag,` in JSON.
    private static func size(_ key: String, _ flag: FlagValue) -> Int {
        key.utf8.count + 4 + FlagJSON.bytes(flag).count
    }

    /// Whether `version` is newer than what is held for `key` (true when either is unknown).
    private func isNewer(_ version: Int?, than key: String) -> Bool {
        guard let version else { return true }
        let held: Int?
        if case .object(let flag)? = flags[key] { held = flag["version"]?.intValue } else { held = deleted[key] }
        guard let held else { return true }
        return version > held
    }
}
