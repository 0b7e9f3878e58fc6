/// Flag values a stream carried, as LaunchDarkly's mobile stream sends them.
enum StreamedValues: Sendable, Equatable {
    /// Every flag, replacing all (`put`: the polling answer's shape, `{key: flag}`).
    case put([String: FlagValue])
    /// One flag, as in a polling answer, with its environment version (`patch`).
    case patch(key: String, flag: [String: FlagValue], version: Int?)
    /// One flag removed, as of its environment version (`delete`).
    case delete(key: String, version: Int?)

    /// The event's name: `put`, `patch` or `delete`.
    var event: String {
        switch self {
        case .put: return "put"
        case .patch: return "patch"
        case .delete: return "delete"
        }
    }

    /// Why an event's data was not read.
    struct Problem: Error, Equatable {
        let reason: String
    }

    /// Reads the JSON data of a `put`, `patch` or `delete` event.
    static func read(event: String, data: FlagValue) -> Result<StreamedValues, Problem> {
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
struct StreamedDocument: Sendable, Equatable {
    /// The flags, in the polling answer's shape.
    private(set) var flags: [String: FlagValue] = [:]
    /// Deleted flags' versions.
    private(set) var deleted: [String: Int] = [:]
    /// About how many bytes the flags and the deletions take as JSON: what a polling answer
    /// with them would weigh. Every event is capped, but patches of new flags and deletions of
    /// distinct ones add up without end; the provider compares this with the answers' cap.
    private(set) var bytes = 2
    /// Each flag's and deletion's share of ``bytes``.
    private var sizes: [String: Int] = [:]

    /// Applies `values`; false when it changes nothing because the version held is as new or
    /// newer (a `put` always applies). Versions are compared only when both sides have one.
    mutating func apply(_ values: StreamedValues) -> Bool {
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
