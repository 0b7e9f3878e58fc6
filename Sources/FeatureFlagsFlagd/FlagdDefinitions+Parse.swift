import Foundation
package import FeatureFlags

extension FlagdDefinitions {
    /// The largest document accepted (4 MiB): rules for tens of thousands of flags.
    package static let maxDocumentBytes = 4 << 20

    /// Parses and compiles a flag-definition document.
    /// - Parameters:
    ///   - bytes: the JSON document.
    ///   - bucketing: how `fractional` buckets (flagd's current high-precision by default).
    /// - Throws: ``FlagdDocumentError`` when the document is not JSON, is too large, or has no
    ///   usable `flags`. Problems of single flags do not throw: see ``problems``.
    package static func parse(
        _ bytes: some Collection<UInt8>, bucketing: FractionalBucketing = .highPrecision
    ) throws(FlagdDocumentError) -> FlagdDefinitions {
        guard bytes.count <= maxDocumentBytes else {
            throw FlagdDocumentError([FlagViolation(path: "$", message: "the document is \(bytes.count) bytes; the limit is \(maxDocumentBytes)")])
        }
        let json: FlagValue
        do {
            json = try FlagJSON.parse(Array(bytes))
        } catch {
            throw FlagdDocumentError([FlagViolation(path: "$", message: "not JSON: \(error)")])
        }
        return try parse(json: json, bucketing: bucketing)
    }

    /// Parses and compiles a document already read as a ``FlagValue``.
    package static func parse(json: FlagValue, bucketing: FractionalBucketing = .highPrecision) throws(FlagdDocumentError) -> FlagdDefinitions {
        guard case .object(let top) = json else {
            throw FlagdDocumentError([FlagViolation(path: "$", message: "the document is \(json.typeNameWithArticle), expected an object")])
        }
        var problems: [FlagViolation] = []
        var setMetadata: [String: FlagValue] = [:]
        if let raw = top["metadata"] {
            setMetadata = metadata(raw, at: "metadata", problems: &problems)
        }
        var evaluators: [String: FlagValue] = [:]
        switch top["$evaluators"] {
        case nil, .null?: break
        case .object(let members)?: evaluators = members
        case let other?: problems.append(FlagViolation(path: "$evaluators", message: "is \(other.typeNameWithArticle), expected an object"))
        }
        // Each evaluator is checked once on its own, so a broken one is reported even if unused;
        // one compiler for the document compiles each evaluator once.
        var compiler = LogicCompiler(evaluators: evaluators)
        // Evaluators that refer to a broken one meet its problem again: said once (a set, not a
        // search of the list: a document may hold thousands of evaluators).
        var reported = Set<String>()
        for name in evaluators.keys.sorted() {
            do throws(LogicCompileError) {
                _ = try compiler.compile(.object(["$ref": .string(name)]), at: "$evaluators.\(name)")
            } catch {
                if reported.insert(error.path + "\n" + error.message).inserted {
                    problems.append(FlagViolation(path: error.path, message: error.message))
                }
            }
        }
        let listed: [(key: String, path: String, json: FlagValue)]
        switch top["flags"] {
        case .object(let members)?:
            listed = members.keys.sorted().map { ($0, "flags.\($0)", members[$0]!) }
        case .list(let items)?:
            var seen = Set<String>()
            var collected: [(String, String, FlagValue)] = []
            for (index, item) in items.enumerated() {
                guard case .object(var members) = item, case .string(let key)? = members.removeValue(forKey: "key") else {
                    problems.append(FlagViolation(path: "flags[\(index)]", message: "a flag in the list form is an object with a string \"key\""))
                    continue
                }
                guard seen.insert(key).inserted else {
                    problems.append(FlagViolation(path: "flags[\(index)].key", message: "flag \"\(key)\" appears twice; the first is kept"))
                    continue
                }
                collected.append((key, "flags[\(index)]", .object(members)))
            }
            listed = collected
        case nil:
            throw FlagdDocumentError(problems + [FlagViolation(path: "flags", message: "is required")])
        case let other?:
            throw FlagdDocumentError(problems + [FlagViolation(path: "flags", message: "is \(other.typeNameWithArticle), expected an object (or a list of flags)")])
        }
        var flags: [String: Flag] = [:]
        flags.reserveCapacity(listed.count)
        for (key, path, json) in listed {
            if key.isEmpty {
                problems.append(FlagViolation(path: path, message: "a flag key is at least one character"))
                continue
            }
            flags[key] = flag(key, json, at: path, compiler: &compiler, setMetadata: setMetadata, problems: &problems)
        }
        return FlagdDefinitions(flags: flags, problems: problems, metadata: setMetadata, bucketing: bucketing, eventStreams: top["eventStreams"])
    }

    /// Metadata: an object of strings, numbers and Booleans (other members are reported and dropped).
    private static func metadata(_ raw: FlagValue, at path: String, problems: inout [FlagViolation]) -> [String: FlagValue] {
        guard case .object(let members) = raw else {
            problems.append(FlagViolation(path: path, message: "is \(raw.typeNameWithArticle), expected an object"))
            return [:]
        }
        var kept: [String: FlagValue] = [:]
        for key in members.keys.sorted() {
            switch members[key]! {
            case .string, .int, .double, .bool: kept[key] = members[key]
            case let other: problems.append(FlagViolation(path: "\(path).\(key)", message: "is \(other.typeNameWithArticle); metadata values are strings, numbers or Booleans"))
            }
        }
        return kept
    }

    /// One flag: valid, or kept as a parse error with the first problem.
    private static func flag(
        _ key: String, _ json: FlagValue, at path: String, compiler: inout LogicCompiler, setMetadata: [String: FlagValue],
        problems: inout [FlagViolation]
    ) -> Flag {
        let before = problems.count
        func invalid(_ reason: String, metadata: [String: FlagValue] = setMetadata) -> Flag {
            Flag(key: key, outcome: .invalid(reason), metadata: metadata, constant: failure(.parseError, reason, metadata: metadata))
        }
        guard case .object(let members) = json else {
            problems.append(FlagViolation(path: path, message: "is \(json.typeNameWithArticle), expected a flag object"))
            return invalid("the flag is not an object")
        }
        var merged = setMetadata
        if let raw = members["metadata"] {
            merged.merge(metadata(raw, at: "\(path).metadata", problems: &problems)) { _, flag in flag }
        }
        var enabled = true
        switch members["state"] {
        case .string("ENABLED")?: break
        case .string("DISABLED")?: enabled = false
        case nil: problems.append(FlagViolation(path: "\(path).state", message: "is required (ENABLED or DISABLED)"))
        case let other?: problems.append(FlagViolation(path: "\(path).state", message: "is \(other), expected \"ENABLED\" or \"DISABLED\""))
        }
        var variants: [String: FlagValue] = [:]
        switch members["variants"] {
        case .object(let found)?:
            variants = found
            var kinds = Set<String>()
            for name in found.keys.sorted() {
                let value = found[name]!
                switch value {
                case .bool: kinds.insert("boolean")
                case .string: kinds.insert("string")
                case .int, .double: kinds.insert("number")
                case .object: kinds.insert("object")
                case .list, .null:
                    problems.append(FlagViolation(path: "\(path).variants.\(name)", message: "is \(value.typeNameWithArticle); a variant is a Boolean, string, number or object"))
                }
                if name.isEmpty { problems.append(FlagViolation(path: "\(path).variants", message: "a variant name is at least one character")) }
            }
            if kinds.count > 1 {
                problems.append(FlagViolation(path: "\(path).variants", message: "mixes \(kinds.sorted().joined(separator: " and ")) values; every variant of a flag has one type"))
            }
        case nil: problems.append(FlagViolation(path: "\(path).variants", message: "is required"))
        case let other?: problems.append(FlagViolation(path: "\(path).variants", message: "is \(other.typeNameWithArticle), expected an object"))
        }
        var defaultVariant: String?
        switch members["defaultVariant"] {
        case nil, .null?: break
        case .string(let name)?:
            if LogicCoercion.member(name, of: variants) == nil, members["variants"]?.objectValue != nil {
                problems.append(FlagViolation(path: "\(path).defaultVariant", message: "names \"\(name)\", which is not one of the variants"))
            }
            defaultVariant = name
        case let other?: problems.append(FlagViolation(path: "\(path).defaultVariant", message: "is \(other.typeNameWithArticle), expected a variant name or null"))
        }
        var targeting: LogicRule?
        switch members["targeting"] {
        case nil, .null?: break
        case .object(let rule)? where rule.isEmpty: break
        case .object?:
            do throws(LogicCompileError) {
                targeting = try compiler.compile(members["targeting"]!, at: "\(path).targeting")
            } catch {
                problems.append(FlagViolation(path: error.path, message: error.message))
            }
        case let other?: problems.append(FlagViolation(path: "\(path).targeting", message: "is \(other.typeNameWithArticle), expected a JsonLogic object"))
        }
        if problems.count > before, let first = problems[before...].first(where: { !$0.path.hasSuffix(".metadata") && !$0.path.contains(".metadata.") }) {
            return invalid(first.description, metadata: merged)
        }
        let outcome = Flag.Outcome.valid(enabled: enabled, variants: variants, defaultVariant: defaultVariant, targeting: targeting)
        var constant: FlagEntry?
        if !enabled {
            constant = FlagEntry(value: nil, reason: .disabled, metadata: merged)
        } else if targeting == nil {
            constant = resolved(defaultVariant, variants: variants, reason: .static, metadata: merged)
        }
        return Flag(key: key, outcome: outcome, metadata: merged, constant: constant)
    }

    /// An evaluation error: no value (the code default), `ERROR` with `code`, and `details`
    /// under `errorDetails` in the metadata (as OFREP reports them).
    static func failure(_ code: FlagErrorCode, _ details: String, metadata: [String: FlagValue]) -> FlagEntry {
        var metadata = metadata
        metadata["errorDetails"] = .string(details)
        return FlagEntry(value: nil, reason: .error, errorCode: code, metadata: metadata)
    }

    /// The entry for `variant` (nil: the code default, reason `DEFAULT`).
    static func resolved(_ variant: String?, variants: [String: FlagValue], reason: FlagReason, metadata: [String: FlagValue]) -> FlagEntry {
        guard let variant else { return FlagEntry(value: nil, reason: .default, metadata: metadata) }
        guard let value = LogicCoercion.member(variant, of: variants) else {
            // The name is not shown: a rule may return a context value (`{"var": "email"}`).
            return failure(.general, "the targeting named a variant this flag does not define", metadata: metadata)
        }
        return FlagEntry(value: value, variant: variant, reason: reason, metadata: metadata)
    }
}
