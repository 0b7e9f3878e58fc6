import Foundation
/// A command's options, for parsing and for its `--help`.
struct CommandSpec: Sendable {
    struct Option: Sendable {
        /// The name without dashes.
        let name: String
        /// The value's placeholder (`URL`), or nil for a flag without a value.
        let value: String?
        let help: String
        var repeatable = false
    }

    let name: String
    let summary: String
    /// Required positional arguments' names, e.g. `["FILE"]`.
    let positionals: [String]
    let options: [Option]
    /// Example invocations for the help text.
    let examples: [String]
    /// What the exit statuses mean, when the command has more than 0 and usage errors.
    var exitStatuses: [(code: Int32, meaning: String)] = []

    var usageLine: String {
        var parts = ["flagctl", name]
        parts += positionals
        for option in options {
            let text = option.value.map { "--\(option.name) \($0)" } ?? "--\(option.name)"
            parts.append(option.repeatable ? "[\(text)]…" : "[\(text)]")
        }
        return parts.joined(separator: " ")
    }

    var help: String {
        var lines = ["flagctl \(name) — \(summary)", "", "USAGE: \(usageLine)", "", "OPTIONS:"]
        for option in options {
            let left = option.value.map { "--\(option.name) \($0)" } ?? "--\(option.name)"
            lines.append("  " + left.padding(toLength: 26, withPad: " ", startingAt: 0) + option.help)
        }
        lines.append("  " + "-h, --help".padding(toLength: 26, withPad: " ", startingAt: 0) + "show this help")
        if !examples.isEmpty {
            lines += ["", "EXAMPLES:"] + examples.map { "  " + $0 }
        }
        if !exitStatuses.isEmpty {
            lines += ["", "EXIT STATUS:"] + exitStatuses.map { "  " + "\($0.code)".padding(toLength: 6, withPad: " ", startingAt: 0) + $0.meaning }
        }
        return lines.joined(separator: "\n")
    }
}

extension CommandSpec.Option {
    /// `--strategy NAME`: how a set of endpoints combines.
    static let strategy = CommandSpec.Option(
        name: "strategy", value: "NAME",
        help: "with several --endpoint: chain (default), first-match, first-successful or comparison (the first endpoint answers a disagreement)")
    /// `--timeout SECONDS`: the fetch budget.
    /// `--method get|post`: how the json format asks for its document.
    static let method = CommandSpec.Option(
        name: "method", value: "get|post",
        help: "json: GET a static document (a CDN, a static host) or POST the context (the default; a {placeholder} URL is always GET)")

    static let timeout = CommandSpec.Option(
        name: "timeout", value: "SECONDS", help: "the fetch budget in seconds, \(acceptedTimeouts) (default 2)")
    /// The budgets `--timeout` takes, in words: "from 0.001 to 60".
    static let acceptedTimeouts = "from \(minimumTimeout) to \(Int(maximumTimeout))"
    /// The shortest budget `--timeout` takes: one millisecond.
    static let minimumTimeout = 0.001
    /// The longest budget `--timeout` takes.
    static let maximumTimeout = 60.0
}

/// Parsed arguments of one command.
struct ParsedArguments: Sendable {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var wantsHelp = false
    /// The process's environment variables (given by ``FlagCtl/run(_:console:signals:environment:)``).
    var environment: [String: String] = [:]

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The fetch budget given with `--timeout SECONDS` (default 2 s), shared by the commands
    /// that fetch.
    func fetchBudget() throws(UsageError) -> Duration {
        guard let text = value("timeout") else { return .seconds(2) }
        let limits = CommandSpec.Option.minimumTimeout...CommandSpec.Option.maximumTimeout
        guard let seconds = Double(text), limits.contains(seconds) else {
            throw UsageError(
                message: "--timeout takes seconds \(CommandSpec.Option.acceptedTimeouts), got '\(text)'; e.g. --timeout 0.5")
        }
        return .microseconds(Int64((seconds * 1_000_000).rounded()))
    }
}

/// A command line that cannot be run: one line saying what was wrong and what to type.
struct UsageError: Error, Equatable {
    let message: String
}

enum ArgumentParser {
    /// Parses `arguments` (after the command name) against `spec`.
    static func parse(_ arguments: [String], _ spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "-h" || argument == "--help" {
                parsed.wantsHelp = true
                continue
            }
            if argument == "--" {
                parsed.positionals += arguments[index...]
                break
            }
            guard argument.hasPrefix("--") else {
                if argument.hasPrefix("-"), argument.count > 1, Double(argument) == nil {
                    throw UsageError(message: "unknown option \(argument); options start with two dashes, see flagctl \(spec.name) --help")
                }
                parsed.positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var inlineValue: String?
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = spec.options.first(where: { $0.name == name }) else {
                let hint = suggestion(for: name, among: spec.options.map(\.name)).map { " (did you mean --\($0)?)" } ?? ""
                throw UsageError(message: "unknown option --\(name)\(hint); see flagctl \(spec.name) --help")
            }
            guard let placeholder = option.value else {
                if inlineValue != nil { throw UsageError(message: "--\(name) takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                    throw UsageError(message: "--\(name) needs a value: --\(name) \(placeholder)")
                }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable, parsed.values[name] != nil {
                throw UsageError(message: "--\(name) given twice; give it once")
            }
            parsed.values[name, default: []].append(value)
        }
        if parsed.wantsHelp { return parsed }
        if parsed.positionals.count < spec.positionals.count {
            let missing = spec.positionals[parsed.positionals.count]
            throw UsageError(message: "missing \(missing)")  // the usage line follows the message
        }
        if parsed.positionals.count > spec.positionals.count {
            throw UsageError(message: "unexpected argument \(parsed.positionals[spec.positionals.count])")
        }
        return parsed
    }

    /// The closest name within two edits, if any.
    static func suggestion(for name: String, among names: [String]) -> String? {
        names.map { ($0, distance(name, $0)) }.filter { $0.1 <= 2 }.min { $0.1 < $1.1 }?.0
    }

    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

extension ParsedArguments {
    /// The `--header 'Name: value'` options as a dictionary.
    func headers() throws(UsageError) -> [String: String] {
        var headers: [String: String] = [:]
        for header in all("header") {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                // Not echoed: a malformed header is most often a credential with its colon missing.
                throw UsageError(message: "--header takes 'Name: value' and the value given has no colon before it (not shown: it may be a secret)")
            }
            headers[String(header[..<colon])] = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }
}
