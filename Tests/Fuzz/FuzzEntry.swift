// libFuzzer entry points for every decoder that reads untrusted bytes. Not part of the
// package build: `.ci/fuzz` compiles this file together with Sources/FeatureFlags into one
// module with `-sanitize=fuzzer,address` and picks the target with FUZZ_TARGET.
import Foundation

/// The decoder under test, chosen once per process.
let fuzzTarget = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? "json"

private enum FuzzFeature: String, Sendable, UnknownCaseRepresentable {
    case usage, billing, team, unknown
}

private struct Banner: Decodable {
    let title: String
    let priority: Int
    let ratio: Double
    let link: URL?
    let tags: [String]
}

/// A schema using every kind of rule, for validating fuzzed payloads.
private let fuzzSchema = try? FlagSchema(parsing: [
    "max_payload_bytes": 16_384,
    "flags": [
        "plan_themeColor": ["type": "string", "format": "hex-color", "required": true],
        "plan_displayName": ["type": "string", "minLength": 1, "maxLength": 40],
        "plan_data_limit": ["type": "int", "min": 0, "max": 100_000],
        "released": ["type": "string", "format": "iso8601"],
        "plan_feature_list": ["type": "list", "maxItems": 20, "items": ["type": "string", "pattern": "[a-z][a-z0-9_]*"]],
        "tier": ["enum": ["personal", "business"]],
        "kill_switch": ["type": "bool", "required": true],
    ],
])

/// The signing key of the `signature` target and the keys that trust it.
private let fuzzSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
private let fuzzKeys = (try? TrustedKeys(["fuzz": Base64URL.encode(Ed25519.publicKey(seed: fuzzSeed))])) ?? TrustedKeys.none

/// The other services' formats of the `services` target (OFREP, LaunchDarkly, Firebase, Unleash).
private let fuzzServices: [FlagEndpoint] = {
    let base = URL(string: "http://127.0.0.1:9")!
    return [
        .ofrep(baseURL: base), .launchDarkly(mobileKey: "mob-fuzz", baseURL: base, streamBaseURL: base),
        .firebaseRemoteConfig(projectID: "p", apiKey: "k", appID: "1:1:ios:1", appInstanceID: "i", baseURL: base),
        .unleash(baseURL: base, clientKey: "c"),
    ]
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch fuzzTarget {
    case "json":
        if let value = try? FlagJSON.parse(bytes) {
            // Whatever parses must write and parse back to the same value.
            let again = try? FlagJSON.parse(FlagJSON.bytes(value))
            precondition(again == value || containsNaN(value), "JSON round trip changed the value")
        }
    case "document":
        if let document = try? FlagDocument(json: bytes) {
            precondition((try? FlagDocument(json: document.jsonBytes())) == document, "document round trip changed it")
        }
    case "fallback-file":
        if let entries = try? FallbackFileFormat.decode(bytes) {
            for entry in entries {
                _ = entry.payload.withUnsafeBytes { raw in try? SnapshotCodec.decode(raw) }
            }
        }
    case "sse":
        // Any bytes parse without a crash, and how they are split into pieces never changes
        // the events, the last event ID or the retry time.
        var whole = EventStreamParser(maxEventBytes: 4_096)
        var split = EventStreamParser(maxEventBytes: 4_096)
        let cut = size == 0 ? 0 : Int(bytes[0]) % (size + 1)
        let once = Result { () throws(EventStreamParser.Overflow) in try whole.feed(bytes) }
        let twice = Result { () throws(EventStreamParser.Overflow) in
            try split.feed(bytes[..<cut]) + split.feed(bytes[cut...])
        }
        switch (once, twice) {
        case (.success(let a), .success(let b)):
            precondition(a == b && whole.lastEventID == split.lastEventID && whole.retry == split.retry, "split changed the events")
            // And what the change streams make of each event (its JSON, its numbers).
            for event in a {
                _ = ChangeStream.refetch(in: event)
                var reader = LaunchDarklyStreamReader(maxBytes: 1 << 20)
                _ = reader.read(event)
            }
        case (.failure, .failure):
            break
        default:
            preconditionFailure("split changed whether the stream overflows")
        }
    case "snapshot":
        // A stored snapshot as the provider shows it: its age in an event's line.
        if let stored = bytes.withUnsafeBytes({ raw in try? SnapshotCodec.decode(raw) }) {
            _ = FlagEvent.stale(age: stored.snapshot.age(at: Date(timeIntervalSince1970: 1_750_000_000))).description
        }
    case "schema":
        if let schema = try? FlagSchema(json: bytes) {
            _ = schema.validate(["plan_themeColor": FlagEntry(value: "#3498DB"), "n": FlagEntry(value: [1, 2.5, "x"])], payloadBytes: size)
        }
        if let value = try? FlagJSON.parse(bytes), case .object(let members) = value {
            _ = fuzzSchema?.validate(members.mapValues { FlagEntry(value: $0) }, payloadBytes: size)
        }
    case "decoder":
        if let value = try? FlagJSON.parse(bytes) { _ = try? FlagValueDecoder().decode(Banner.self, from: value) }
    case "policy":
        // Policies over untrusted values: app versions and updates, forward-compatible
        // lists, merging.
        let text = String(decoding: bytes, as: UTF8.self)
        if let version = AppVersion(text) {
            precondition(AppVersion(version.description) == version, "app version round trip changed it")
        }
        if let value = try? FlagJSON.parse(bytes) {
            if let update = ApplicationUpdate(flagValue: value) {
                precondition(ApplicationUpdate(flagValue: update.flagValue) == update, "update round trip changed it")
            }
            let key = FlagKey<[FuzzFeature]>("features", default: [])
            if let members = key.value(from: value), let unknown = key.unknownMembers?(value) {
                precondition(members.filter { $0 == .unknown }.count >= unknown.count, "an unknown member was neither mapped nor reported")
            }
            let candidates = (value.listValue ?? [value]).prefix(16).map {
                (context: EvaluationContext.anonymous, value: $0)
            }
            if !candidates.isEmpty {
                for policy in [MergePolicy.topTier, .union, .maximum, .minimum, .any, .all] { _ = policy.merge(candidates) }
            }
        }
    case "flagd":
        // The bytes as a definitions document, else as one flag's targeting rule.
        var definitions = try? FlagdDefinitions.parse(bytes)
        if definitions == nil, let rule = try? FlagJSON.parse(bytes) {
            let document: FlagValue = ["flags": ["f": [
                "state": "ENABLED", "variants": ["a": 1, "b": 2, "true": 3, "false": 4], "defaultVariant": "a", "targeting": rule,
            ]], "$evaluators": ["e": rule]]
            definitions = try? FlagdDefinitions.parse(json: document, bucketing: bytes.count % 2 == 0 ? .highPrecision : .legacyPercent)
        }
        if let definitions {
            let contexts = [
                EvaluationContext.anonymous,
                EvaluationContext(targetingKey: "user-1", attributes: ["venue": "v-1", "version": "1.2.3", "n": 3, "list": [1, "a"]]),
            ]
            for context in contexts { _ = definitions.evaluate(for: context, at: Date(timeIntervalSince1970: 1_750_000_000)) }
            // Rules that parsed from these bytes survive the fallback file.
            if (try? FlagdDefinitions.parse(bytes)) != nil {
                let rules = LocalRules(definitions: definitions, document: Array(bytes), etag: nil, fetchedAt: Date(timeIntervalSince1970: 0))
                let kept = HeldRulesEntry.rules(in: ArraySlice(HeldRulesEntry.encoded(rules)), readBy: FlagdEndpoint(url: URL(fileURLWithPath: "/")))
                if kept == nil { fatalError("rules that parsed did not round-trip") }
            }
        }
    case "signature":
        // Any bytes as a JWS against a trusted key, and as a raw (signature, key, message):
        // never a crash, and nothing verifies that the key did not sign.
        if case .success(let verified) = JWS.verify(bytes, trusting: fuzzKeys) {
            // Only the fuzz key's own signatures can verify: the bytes must then carry one.
            precondition(verified.keyID == "fuzz", "a document verified under a key that is not trusted")
        }
        if bytes.count >= 96 {
            let signature = Array(bytes[0..<64])
            let key = Array(bytes[64..<96])
            let message = Array(bytes[96...])
            if Ed25519.verify(signature: signature, of: message, publicKey: key) {
                // A forgery on random bytes would be a broken verifier; the only way in is a
                // small-order key with a matching R, which RFC 8032's cofactorless check allows.
                precondition(Ed25519.isBelowOrder(Array(signature[32...])), "S ≥ L accepted")
            }
        }
        // What we sign verifies, and the signed message changed by a byte does not.
        let signed = JWS.sign(bytes, seed: fuzzSeed, keyID: "fuzz")
        precondition((try? JWS.verify(signed, trusting: fuzzKeys).get())?.payload == bytes, "our own signature did not verify")
    case "services":
        // Any bytes as each other service's answer (and error body): a clear error or flags,
        // never a crash; LaunchDarkly's streamed `put` takes the same bytes.
        let context = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "v-1", "n": 3])
        let response = FlagResponse(status: 200, headers: ["etag": "\"e1\""], body: bytes)
        for endpoint in fuzzServices {
            _ = try? endpoint.decode(response, for: context)
            _ = endpoint.failureDetail(FlagResponse(status: 400, body: bytes))
        }
        if let launchDarkly = fuzzServices.lazy.compactMap({ $0.format.asStreaming }).first,
            case .object(let top)? = try? FlagJSON.parse(bytes)
        {
            _ = try? launchDarkly.decode(streamed: top, for: context)
        }
    case "retry-after":
        // The header as the provider takes it: a wait, and a line in the error.
        if let seconds = RetryAfter.delay(String(decoding: bytes, as: UTF8.self), now: Date(timeIntervalSince1970: 1_750_000_000)) {
            precondition(Duration.boundedWait(seconds: seconds) <= .longestWait, "a Retry-After beyond the longest wait")
            _ = FetchError.httpStatus(503, retryAfter: seconds).description
        }
    default:
        fatalError("unknown FUZZ_TARGET \(fuzzTarget)")
    }
    return 0
}

private func containsNaN(_ value: FlagValue) -> Bool {
    switch value {
    case .double(let d): return d.isNaN
    case .list(let items): return items.contains(where: containsNaN)
    case .object(let members): return members.values.contains(where: containsNaN)
    default: return false
    }
}
