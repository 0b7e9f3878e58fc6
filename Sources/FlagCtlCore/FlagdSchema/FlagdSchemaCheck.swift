import FeatureFlags

/// A flagd flag-definition document against flagd's own published schema (`flagd.json`,
/// release ``FlagdSchemaDocuments/release``): what flagd's daemon logs as "does not conform to
/// the schema" when it loads the file — and then evaluates anyway. The library evaluates such
/// rules as flagd does; `flagctl lint` reports the departures as violations and `flagctl serve`
/// prints them as warnings, so a rule file is caught before it reaches flagd or another
/// provider that enforces the schema.
///
/// The format checks of ``FeatureFlagsFlagd`` (``FlagdDefinitions/problems``) come first: a
/// departure under a flag, evaluator or member those already name is left out, so each fault
/// is said once, in the more precise words.
enum FlagdSchemaCheck {
    /// Validation steps allowed per JSON value of the document (and a million for any
    /// document): ordinary rules take about 15 per value — a `oneOf` tries each alternative;
    /// nested alternatives in a hostile file, which could multiply the work, cannot hold `lint`
    /// longer than this.
    static let stepsPerValue = 100

    /// The steps allowed for `document`.
    static func budget(for document: FlagValue) -> Int {
        func count(_ value: FlagValue) -> Int {
            switch value {
            case .list(let items): items.reduce(1) { $0 + count($1) }
            case .object(let members): members.values.reduce(1) { $0 + count($1) }
            default: 1
            }
        }
        return 1_000_000 + stepsPerValue * count(document)
    }

    /// The schema's patterns in words.
    static let patternNames = [
        #"^\$flagd\.((timestamp)|(flagKey))$"#: "a property flagd injects ($flagd.timestamp, $flagd.flagKey)",
        #"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"#:
            "a version as semver.org writes it (MAJOR.MINOR.PATCH, no leading v)",
    ]

    /// What the check found.
    struct Result {
        /// Departures from the schema, each with its path in `lint`'s notation.
        var departures: [FlagViolation] = []
        /// The budget ran out: the document was not (fully) checked.
        var unchecked = false
    }

    /// The departures of `document` from flagd's schema that `reported` does not already cover.
    static func check(_ document: FlagValue, besides reported: [FlagViolation], budget: Int? = nil) -> Result {
        var documents: [String: FlagValue] = [:]
        for (name, text) in FlagdSchemaDocuments.texts {
            // The texts are constants of this file's release; a failure would be caught by the tests.
            documents[name] = (try? FlagJSON.parse(text)) ?? .bool(true)
        }
        let budget = budget ?? Self.budget(for: document)
        var validator = JSONSchemaValidator(documents: documents, root: "flagd.json", patternNames: patternNames, budget: budget)
        let failures: [JSONSchemaValidator.Failure]
        do {
            failures = try validator.validate(document)
        } catch {
            return Result(unchecked: true)
        }
        // Every path a reported violation is about or inside: `flags.a.state` covers
        // `flags.a.state`, `flags.a` and `flags`.
        var covered = Set<String>()
        for violation in reported { covered.formUnion(enclosing(violation.path)) }
        var result = Result()
        var seen = Set<JSONSchemaValidator.Failure>()
        for failure in failures where seen.insert(failure).inserted {
            if covered.contains(render(owner(of: failure))) { continue }
            result.departures.append(FlagViolation(path: render(failure.path), message: validator.message(failure)))
        }
        return result
    }

    /// The part of the document a format check reports on as a whole: one flag (`flags.x`,
    /// `flags[3]`) or one evaluator; any other member stands for itself — a member the schema
    /// does not allow (a flag key of no characters) for that member, not its object.
    static func owner(of failure: JSONSchemaValidator.Failure) -> [JSONSchemaValidator.Step] {
        var path = failure.path
        if case .memberNotAllowed(let name) = failure.problem { path.append(.member(name)) }
        guard path.count >= 2, case .member(let top) = path[0], top == "flags" || top == "$evaluators" else { return path }
        return Array(path.prefix(2))
    }

    /// `path` and every path it is inside, in `lint`'s notation (`flags.a[2]`, `flags.a`,
    /// `flags`).
    static func enclosing(_ path: String) -> [String] {
        var result = [path]
        var index = path.endIndex
        while index > path.startIndex {
            index = path.index(before: index)
            if path[index] == "." || path[index] == "[" { result.append(String(path[..<index])) }
        }
        return result
    }

    /// `flags.x.targeting.fractional[1][1]`; the document itself is `$`.
    static func render(_ path: [JSONSchemaValidator.Step]) -> String {
        var text = ""
        for step in path {
            switch step {
            case .member(let name): text += text.isEmpty ? name : ".\(name)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text.isEmpty ? "$" : text
    }
}
