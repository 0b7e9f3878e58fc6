import FeatureFlags
import Foundation

/// The figures of one run, printed as a table or as JSON lines, with the budgets checked.
final class Report {
    struct Figure {
        let section: String
        let name: String
        let value: Double
        let unit: String
        var spread: Double?
        var floor: String?
        var ratio: Double?
        var budget: String?
        var passed: Bool?
    }

    private(set) var figures: [Figure] = []
    let json: Bool

    init(json: Bool) { self.json = json }

    /// Records and prints a figure.
    func add(_ figure: Figure) {
        figures.append(figure)
        if json {
            var members: [String: FlagValue] = [
                "section": .string(figure.section), "name": .string(figure.name), "value": .double(figure.value),
                "unit": .string(figure.unit),
            ]
            members["spread"] = figure.spread.map(FlagValue.double)
            members["floor"] = figure.floor.map(FlagValue.string)
            members["ratio"] = figure.ratio.map(FlagValue.double)
            members["budget"] = figure.budget.map(FlagValue.string)
            members["passed"] = figure.passed.map(FlagValue.bool)
            print(FlagJSON.string(.object(members), sortedKeys: true))
        } else {
            let value = Self.format(figure.value, figure.unit)
            let spread = figure.spread.map { String(format: "±%.0f%%", $0 * 50) } ?? ""
            let ratio = figure.ratio.map { String(format: "%.2f× %@", $0, figure.floor ?? "") } ?? ""
            let budget = figure.budget.map { "\($0) " + ((figure.passed ?? false) ? "ok" : "MISSED") } ?? ""
            print(
                "  " + (figure.name.count > 52 ? String(figure.name.prefix(51)) + "…" : figure.name).padding(toLength: 53, withPad: " ", startingAt: 0) + value.padding(toLength: 12, withPad: " ", startingAt: 0)
                    + spread.padding(toLength: 7, withPad: " ", startingAt: 0) + ratio.padding(toLength: 30, withPad: " ", startingAt: 0) + budget)
        }
        fflush(nil)  // into a file or a pipe too, each figure as it is measured
    }

    /// Starts a section in the table.
    func section(_ title: String) {
        if !json { print("\n\(title)") }
        fflush(nil)
    }

    /// A line of explanation in the table.
    func note(_ text: String) {
        if !json { print("  · \(text)") }
        fflush(nil)
    }

    var missed: [Figure] { figures.filter { $0.passed == false } }

    static func format(_ value: Double, _ unit: String) -> String {
        switch unit {
        case "ns": return String(format: "%.1f ns", value)
        case "µs": return String(format: "%.1f µs", value)
        case "ms": return String(format: "%.2f ms", value)
        case "bytes": return value >= 10_000 ? String(format: "%.0f KB", value / 1_000) : String(format: "%.0f B", value)
        default: return String(format: "%g %@", value, unit)
        }
    }
}

/// A payload of `count` flags of mixed kinds, like a real app's: Booleans, numbers,
/// colours and names, feature lists.
func sampleFlags(_ count: Int) -> [String: FlagEntry] {
    var flags: [String: FlagEntry] = [:]
    flags.reserveCapacity(count)
    for i in 0..<count {
        let value: FlagValue
        switch i % 5 {
        case 0: value = .bool(i % 2 == 0)
        case 1: value = .string("value-number-\(i)-of-the-sample")
        case 2: value = .int(i * 7)
        case 3: value = .double(Double(i) / 8)
        default: value = .list(["usage", "billing", "map"])
        }
        flags["feature_flag_\(i)"] = FlagEntry(value: value, variant: i % 10 == 0 ? "on" : nil)
    }
    return flags
}

/// A fresh temporary directory. Its name has a fixed length, so that runs allocate the
/// same way (the allocation probe compares separate processes).
func temporaryDirectory() -> URL {
    let unique = String(format: "%010d-%010u", Int(getpid()), UInt32.random(in: 0...UInt32.max))
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("flag-benchmarks-\(unique)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}
