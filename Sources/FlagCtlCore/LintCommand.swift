import FeatureFlags
import FeatureFlagsFlagd
import FlagServer
import Foundation

/// `flagctl lint`: config as data. Checks that a flag document (ours, or flagd's flag
/// definitions) parses,
/// that its targeting rules are well formed and — with `--schema` — that every value (the
/// defaults and each rule's) obeys the schema: required keys, types, hex colours, enums,
/// string lengths, payload size. `--bump` sets `meta_config_version` to the current time.
enum LintCommand {
    static let spec = CommandSpec(
        name: "lint", summary: "check a flag document against a schema; bump its version",
        positionals: ["FILE"],
        options: [
            .init(name: "schema", value: "FILE", help: "the schema to check against (see Docs/FlagDocument.md)"),
            .init(name: "bump", value: nil, help: "set meta_config_version to the current ISO-8601 time"),
            .init(name: "write", value: nil, help: "with --bump: write the file back (only if it passes)"),
            .init(name: "json", value: nil, help: "print JSON lines"),
        ],
        examples: [
            "flagctl lint Docs/examples/flags.json --schema Docs/examples/flags.schema.json",
            "flagctl lint config/flags.json --schema config/flags.schema.json",
            "flagctl lint config/flags.json --schema config/flags.schema.json --bump --write",
            "flagctl lint rules.flagd.json    # a flagd file: its format, then flagd's published schema",
        ],
        exitStatuses: [
            (0, "the document passes"), (1, "violations (each printed with its path)"), (64, "usage error"),
            (65, "not a flag document: not JSON (line and column given), or neither format"),
            (66, "the file or the schema cannot be read"), (73, "--write could not write the file"),
        ])

    /// Exit status for a file that is not a flag document at all (BSD `EX_DATAERR`), the same
    /// as `flagctl serve` gives it. A document with violations exits 1.
    static let dataErrorExit: Int32 = 65

    /// What a lint run found.
    struct Report {
        var violations: [FlagViolation] = []
        /// The file is not a document at all (not JSON, or neither format): exit 65, as `serve`.
        var malformed = false
        var warnings: [String] = []
        var flags = 0
        var rules = 0
        var version: String?
    }

    static func run(_ arguments: ParsedArguments, console: Console, now: Date = Date()) throws -> Int32 {
        let file = arguments.positionals[0]
        if arguments.has("write"), !arguments.has("bump") {
            throw UsageError(message: "--write only goes with --bump: flagctl lint FILE --bump --write")
        }
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(file)
        } catch {
            console.err("flagctl lint: cannot read \(file): \(error)")
            return 66
        }
        var schema: FlagSchema?
        if let schemaFile = arguments.value("schema") {
            switch SchemaFile.load(schemaFile, command: "lint", console: console) {
            case .success(let loaded): schema = loaded
            case .failure(let status): return status.code
            }
        }
        let report = lint(bytes, schema: schema)
        let json = arguments.has("json")
        for violation in report.violations {
            console.out(json ? Formatting.json(["path": .string(violation.path), "message": .string(violation.message)]) : "\(file): \(violation)")
        }
        for warning in report.warnings {
            console.out(json ? Formatting.json(["warning": .string(warning)]) : "\(file): warning: \(warning)")
        }
        let summary = report.violations.isEmpty
            ? "ok: \(report.flags) flags, \(report.rules) rules, version \(report.version ?? "-")"
            : "\(report.violations.count) violation\(report.violations.count == 1 ? "" : "s")"
        console.out(json ? Formatting.json(["summary": .string(summary), "violations": .int(report.violations.count)]) : summary)
        guard report.violations.isEmpty else { return report.malformed ? dataErrorExit : 1 }

        if arguments.has("bump") {
            let version = ISO8601.string(now)
            let bumped = bump(String(decoding: bytes, as: UTF8.self), to: version)
            if arguments.has("write") {
                do {
                    try Data(bumped.utf8).write(to: URL(fileURLWithPath: file), options: .atomic)
                } catch {
                    console.err("flagctl lint: cannot write \(file): \(error)")
                    return 73
                }
                console.out(json ? Formatting.json(["bumped": .string(version), "written": true]) : "meta_config_version → \(version) (written)")
            } else {
                console.out(json ? Formatting.json(["bumped": .string(version), "written": false]) : "meta_config_version → \(version) (not written; add --write)")
            }
        }
        return 0
    }

    /// Lints a flagd flag-definition document: every problem of its format, with its JSON path
    /// (state, variants of one type, a default variant that exists, targeting that compiles,
    /// `$evaluators` and their references, metadata), then every departure from flagd's
    /// published schema the format checks did not already name (``FlagdSchemaCheck``: weights
    /// that are not whole numbers ≥ 0, `sem_ver` operators and versions, `$flagd` properties,
    /// operator arities). `--schema` checks FeatureFlags documents only, so it is ignored here
    /// with a warning.
    static func lintFlagd(_ value: FlagValue, schema: FlagSchema?) -> Report {
        var report = Report()
        do {
            let definitions = try FlagdDefinitions.parse(json: value)
            report.violations = definitions.problems
            let schemaCheck = FlagdSchemaCheck.check(value, besides: definitions.problems)
            report.violations += schemaCheck.departures.map {
                FlagViolation(path: $0.path, message: "\($0.message) (flagd's schema \(FlagdSchemaDocuments.release))")
            }
            if schemaCheck.unchecked {
                report.warnings.append("too deeply nested to check against flagd's schema in \(FlagdSchemaCheck.stepsPerValue) steps per value; its format is checked")
            }
            report.flags = definitions.keys.count
            report.rules = definitions.targetedCount
            report.version = definitions.version
        } catch {
            report.violations = error.problems
            report.malformed = true
        }
        if schema != nil { report.warnings.append("--schema checks FeatureFlags flag documents; this is a flagd document, checked against flagd's format") }
        return report
    }

    /// Lints document bytes.
    static func lint(_ bytes: [UInt8], schema: FlagSchema?) -> Report {
        var report = Report()
        let value: FlagValue
        do {
            value = try FlagJSON.parse(bytes)
        } catch {
            report.violations.append(FlagViolation(path: "document", message: error.description))
            report.malformed = true
            return report
        }
        if FlagdFile.looksLike(value) { return lintFlagd(value, schema: schema) }
        let document: ServerDocument
        do {
            document = try ServerDocument(parsing: value)
        } catch {
            report.violations.append(FlagViolation(path: "document", message: error.message))
            report.malformed = true
            return report
        }
        report.flags = document.base.flags.count
        report.rules = document.rules.count
        report.version = document.base.version
        if let version = document.base.version {
            if !FlagSchema.matchesFormat(version, "iso8601") {
                report.warnings.append("meta_config_version \"\(version)\" is not an ISO-8601 time (flagctl lint --bump sets one)")
            }
        } else {
            report.warnings.append("no meta_config_version (flagctl lint --bump sets one)")
        }
        let limit = schema?.maxPayloadBytes ?? FlagFetcher.Configuration().maxResponseBytes
        if bytes.count > limit {
            report.violations.append(FlagViolation(path: "payload", message: "\(bytes.count) bytes, more than the \(limit) allowed"))
        }
        guard let schema else { return report }
        let base = schema.validate(document.base.flags, path: "flags")
        report.violations += base.violations.filter { $0.path != "payload" }
        for (i, rule) in document.rules.enumerated() {
            report.violations += schema.validate(rule.flags, path: "rules[\(i)](\(rule.name)).flags", partial: true).violations
        }
        let unknown = Set(base.unknownKeys).sorted()
        if !unknown.isEmpty, !schema.rejectUnknownKeys {
            report.warnings.append("\(unknown.count) flag\(unknown.count == 1 ? "" : "s") not in the schema: \(unknown.joined(separator: ", "))")
        }
        return report
    }

    /// `text` with `meta_config_version` set to `version`, keeping the rest of the text as written.
    static func bump(_ text: String, to version: String) -> String {
        let replacement = "\"meta_config_version\": \"\(version)\""
        if let regex = try? NSRegularExpression(pattern: #""meta_config_version"\s*:\s*("(?:[^"\\]|\\.)*"|null)"#),
            let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
            let range = Range(match.range, in: text)
        {
            return text.replacingCharacters(in: range, with: replacement)
        }
        if let brace = text.firstIndex(of: "{") {
            var inserted = text
            inserted.insert(contentsOf: "\n  \(replacement),", at: inserted.index(after: brace))
            if (try? FlagJSON.parse(inserted)) != nil { return inserted }
        }
        // Not expressible as an edit (e.g. an empty object): rewrite canonically.
        guard case .object(var members)? = try? FlagJSON.parse(text) else { return text }
        members["meta_config_version"] = .string(version)
        return FlagJSON.string(.object(members), sortedKeys: true)
    }
}
