package import Foundation

/// The project's flag document (`Docs/FlagDocument.md`); an object-valued flag needs the full form `{"value": {…}}`.
package struct FlagDocument: Sendable, Equatable {
    /// `meta_config_version`: the configuration's version (an ISO-8601 time by convention).
    package var version: String?
    /// `meta_ttl_seconds`: how long a client may treat the values as fresh.
    package var ttl: TimeInterval?
    /// The flags by name.
    package var flags: [String: FlagEntry]

    /// A document.
    package init(version: String? = nil, ttl: TimeInterval? = nil, flags: [String: FlagEntry]) {
        self.version = version
        self.ttl = ttl
        self.flags = flags
    }

    /// Member names of the full flag form.
    static let entryMembers: Set<String> = ["value", "variant", "reason", "errorCode", "metadata"]

    /// Reads a document from parsed JSON; throws `PARSE_ERROR` naming the offending member.
    package init(parsing value: FlagValue) throws(FlagError) {
        guard case .object(let top) = value else { throw Self.parseError("the document is not a JSON object") }
        switch top["meta_config_version"] {
        case nil, .null?: version = nil
        case .string(let s)?: version = s
        case let other?: throw Self.parseError("meta_config_version is \(other.typeNameWithArticle), expected a string")
        }
        switch top["meta_ttl_seconds"] {
        case nil, .null?: ttl = nil
        case let number? where number.doubleValue != nil:
            let seconds = number.doubleValue ?? 0
            guard seconds >= 0, seconds.isFinite else { throw Self.parseError("meta_ttl_seconds is negative") }
            ttl = seconds
        case let other?: throw Self.parseError("meta_ttl_seconds is \(other.typeNameWithArticle), expected a number")
        }
        guard case .object(let members)? = top["flags"] else { throw Self.parseError("no \"flags\" object") }
        self.flags = try Self.flags(members)
    }

    /// The flags of a `flags` object (or a flat map of names to flags).
    static func flags(_ members: [String: FlagValue]) throws(FlagError) -> [String: FlagEntry] {
        var flags: [String: FlagEntry] = [:]
        flags.reserveCapacity(members.count)
        for (name, raw) in members { flags[name] = try entry(name, raw) }
        return flags
    }

    /// Reads a document from JSON bytes.
    package init(json bytes: some Sequence<UInt8>) throws(FlagError) { try self.init(parsing: FlagValue(json: bytes)) }

    private static func parseError(_ message: String) -> FlagError { FlagError(.parseError, message) }

    private static func entry(_ name: String, _ raw: FlagValue) throws(FlagError) -> FlagEntry {
        guard case .object(let o) = raw, o["value"] != nil || o["errorCode"] != nil else {
            return FlagEntry(value: raw)
        }
        if let unknown = o.keys.first(where: { !entryMembers.contains($0) }) {
            throw parseError("flag \"\(name)\" has unknown member \"\(unknown)\" (wrap object values as {\"value\": …})")
        }
        func string(_ member: String) throws(FlagError) -> String? {
            switch o[member] {
            case nil, .null?: return nil
            case .string(let s)?: return s
            case let other?: throw parseError("flag \"\(name)\" \(member) is \(other.typeNameWithArticle), expected a string")
            }
        }
        let metadata: [String: FlagValue]
        switch o["metadata"] {
        case nil, .null?: metadata = [:]
        case .object(let m)?: metadata = m
        case let other?: throw parseError("flag \"\(name)\" metadata is \(other.typeNameWithArticle), expected an object")
        }
        return FlagEntry(
            value: o["value"], variant: try string("variant"), reason: try string("reason").map(FlagReason.init(rawValue:)),
            errorCode: try string("errorCode").map(FlagErrorCode.init(wire:)), metadata: metadata)
    }

    /// The document as JSON, bare values where the full form is not needed.
    package var flagValue: FlagValue {
        var flagMembers: [String: FlagValue] = [:]
        for (name, entry) in flags {
            let plain = entry.variant == nil && entry.reason == nil && entry.errorCode == nil && entry.metadata.isEmpty
            if plain, let value = entry.value, value.objectValue == nil {
                flagMembers[name] = value
                continue
            }
            var full: [String: FlagValue] = [:]
            if let value = entry.value { full["value"] = value }
            if let variant = entry.variant { full["variant"] = .string(variant) }
            if let reason = entry.reason { full["reason"] = .string(reason.rawValue) }
            if let code = entry.errorCode { full["errorCode"] = .string(code.rawValue) }
            if !entry.metadata.isEmpty { full["metadata"] = .object(entry.metadata) }
            if full["value"] == nil, full["errorCode"] == nil { full["value"] = .null }
            flagMembers[name] = .object(full)
        }
        var top: [String: FlagValue] = ["flags": .object(flagMembers)]
        if let version { top["meta_config_version"] = .string(version) }
        if let ttl { top["meta_ttl_seconds"] = ttl.rounded() == ttl && abs(ttl) < 1e15 ? .int(Int(ttl)) : .double(ttl) }
        return .object(top)
    }

    /// Canonical JSON bytes (sorted keys): equal documents give equal bytes, hence equal ETags.
    package func jsonBytes() -> [UInt8] { FlagJSON.bytes(flagValue, sortedKeys: true) }
}
