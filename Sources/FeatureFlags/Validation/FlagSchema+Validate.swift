import Foundation

extension FlagSchema {
    /// Checks a payload and its size; findings sorted by path, unknown keys by name. Required keys apply
    /// unless `partial` (a partial set, such as targeting rules' overrides).
    package func validate(
        _ flags: [String: FlagEntry], payloadBytes: Int? = nil, path: String = "flags", partial: Bool = false
    ) -> FlagValidationReport {
        var report = FlagValidationReport()
        if let maxPayloadBytes, let payloadBytes, payloadBytes > maxPayloadBytes {
            report.violations.append(
                FlagViolation(path: "payload", message: "\(payloadBytes) bytes, more than the \(maxPayloadBytes) allowed"))
        }
        for (name, rule) in rules where !partial && rule.required && flags[name]?.value == nil {
            report.violations.append(FlagViolation(path: "\(path).\(name)", message: "required"))
        }
        for (name, entry) in flags {
            guard let value = entry.value else { continue }
            guard let rule = rules[name] else {
                report.unknownKeys.append(name)
                if rejectUnknownKeys {
                    report.violations.append(FlagViolation(path: "\(path).\(name)", message: "no such flag in the schema"))
                }
                continue
            }
            Self.check(value, against: rule, path: .member(path, name), into: &report.violations)
        }
        report.unknownKeys.sort()
        if report.violations.count > 1 {
            let found = report.violations
            report.violations = found.indices.sorted { (found[$0].path, $0) < (found[$1].path, $1) }.map { found[$0] }
        }
        return report
    }

    static func check(
        _ value: FlagValue, against rule: Rule, path: ValuePath, into violations: inout [FlagViolation]
    ) {
        // Text holding JSON counts as its content, as when reading (Firebase, Unleash send text).
        var value = value
        if case .string = value, let type = rule.type, type != "string" { value = value.readingText }
        func fail(_ message: String) { violations.append(FlagViolation(path: path.text, message: message)) }
        if let type = rule.type, !matches(value, type: type) {
            fail("expected \(type), found \(value.typeName)")
            return
        }
        if let allowed = rule.allowed, !allowed.contains(value) {
            fail("\(FlagJSON.string(value)) is not one of \(FlagJSON.string(.list(allowed)))")
        }
        if let number = value.doubleValue, value.boolValue == nil {
            if let min = rule.min, number < min { fail("\(FlagJSON.string(value)) is below the minimum \(format(min))") }
            if let max = rule.max, number > max { fail("\(FlagJSON.string(value)) is above the maximum \(format(max))") }
        }
        if case .string(let text) = value {
            if let minLength = rule.minLength, text.count < minLength { fail("shorter than \(minLength) characters") }
            if let maxLength = rule.maxLength, text.count > maxLength { fail("longer than \(maxLength) characters") }
            if let format = rule.format, !matchesFormat(text, format) { fail("\(FlagJSON.string(value)) is not a \(format)") }
            if let pattern = rule.pattern, !matchesPattern(text, pattern) { fail("does not match \(pattern)") }
        }
        if case .list(let items) = value {
            if let minItems = rule.minItems, items.count < minItems { fail("fewer than \(minItems) items") }
            if let maxItems = rule.maxItems, items.count > maxItems { fail("more than \(maxItems) items") }
            if let itemRule = rule.items.first {
                for (i, item) in items.enumerated() { check(item, against: itemRule, path: .item(path, i), into: &violations) }
            }
        }
    }

    private static func matches(_ value: FlagValue, type: String) -> Bool {
        switch (type, value) {
        case ("bool", .bool), ("int", .int), ("double", .double), ("double", .int), ("number", .double), ("number", .int),
            ("string", .string), ("list", .list), ("object", .object):
            return true
        default:
            return false
        }
    }

    /// `#RRGGBB` or an ISO-8601 date-time.
    package static func matchesFormat(_ text: String, _ format: String) -> Bool {
        switch format {
        case "hex-color":
            let utf8 = Array(text.utf8)
            return utf8.count == 7 && utf8[0] == UInt8(ascii: "#")
                && utf8.dropFirst().allSatisfy { (48...57).contains($0) || (65...70).contains($0) || (97...102).contains($0) }
        case "iso8601":
            return ISO8601.date(text) != nil
        default:
            return true
        }
    }

    private static func matchesPattern(_ text: String, _ pattern: String) -> Bool {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return false }
        let range = NSRange(text.startIndex..., in: text)
        guard let match = regex.firstMatch(in: text, options: [.anchored], range: range) else { return false }
        return match.range == range
    }

    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}

/// Where a value sits in a payload (`flags.name[2]`), spelled out only for a violation.
enum ValuePath: Sendable {
    /// `parent.name` (no allocation: most values are flags).
    case member(String, String)
    /// The `index`th item of a list.
    indirect case item(ValuePath, Int)

    /// The path as violations print it.
    var text: String {
        switch self {
        case .member(let parent, let name): return "\(parent).\(name)"
        case .item(let list, let index): return "\(list.text)[\(index)]"
        }
    }
}
