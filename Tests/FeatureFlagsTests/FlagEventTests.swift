import Foundation
import Testing
@testable import FeatureFlags

/// `FlagEvent`: each factory gives its kind, fills the accessors its kind has (and no other),
/// and renders one log line without context values.
@Suite("Flag events")
struct FlagEventTests {
    /// Every factory, its kind and its log line.
    static let lines: [(FlagEvent, FlagEvent.Kind, String)] = [
        (.ready, .ready, "ready"),
        (.configurationChanged(keys: ["b", "a"]), .configurationChanged, "configuration_changed a,b"),
        (.stale(age: 90.7), .stale, "stale age=90s"),
        (.error(.parseError, message: "bad"), .error, "error PARSE_ERROR: bad"),
        (.reconciling, .reconciling, "reconciling"),
        (.contextChanged, .contextChanged, "context_changed"),
        (.fallbackLoaded(contexts: 2, bytes: 300), .fallbackLoaded, "fallback_loaded contexts=2 bytes=300"),
        (.fallbackRejected(reason: "torn", keptAt: "/x.corrupt"), .fallbackRejected, "fallback_rejected: torn (kept at /x.corrupt)"),
        (.fallbackTampered(reason: "edited", keptAt: nil), .fallbackTampered, "fallback_tampered: edited"),
        (.fallbackWriteFailed(reason: "disk full"), .fallbackWriteFailed, "fallback_write_failed: disk full"),
        (.fallbackWarning(reason: "world-writable"), .fallbackWarning, "fallback_warning: world-writable"),
        (.killSwitch(active: true), .killSwitch, "kill_switch on"),
        (.killSwitch(active: false), .killSwitch, "kill_switch off"),
        (.activated(version: "42", latencyMilliseconds: 12), .activated, "activated version=42 latency=12ms"),
        (.activated(version: nil, latencyMilliseconds: 3), .activated, "activated latency=3ms"),
        (.fetchFailed(.timeout(.seconds(2))), .fetchFailed, "fetch_failed: \(FetchError.timeout(.seconds(2)))"),
        (.fetchCompleted(latencyMilliseconds: 7, outcome: .unchanged), .fetchCompleted, "fetch_completed unchanged latency=7ms"),
        (
            .payloadRejected(violations: [FlagViolation(path: "flags.a", message: "x")], fingerprint: "f1"), .payloadRejected,
            "payload_rejected f1: \(FlagViolation(path: "flags.a", message: "x"))"
        ),
        (.signatureRejected(reason: "unknown kid"), .signatureRejected, "signature_rejected: unknown kid"),
        (.unknownKeys(["z", "y"]), .unknownKeys, "unknown_keys y,z"),
        (.unknownValues(flag: "plans", values: ["gold", "tin"]), .unknownValues, "unknown_values plans: gold,tin"),
        (.streamOpened(stream: "http://h/events"), .streamOpened, "stream_opened http://h/events"),
        (
            .streamClosed(stream: "http://h/events", reason: "reset", retryInMilliseconds: 1000), .streamClosed,
            "stream_closed http://h/events: reset (again in 1000 ms)"
        ),
        (.streamClosed(stream: "http://h/events", reason: "204", retryInMilliseconds: nil), .streamClosed, "stream_closed http://h/events: 204 (not again)"),
        (.changeNotified(stream: "http://h/e", etag: "\"v2\"", via: "patch"), .changeNotified, "change_notified http://h/e via=patch etag=\"v2\""),
        (.safeModeEntered(reason: "3 crashes"), .safeModeEntered, "safe_mode_entered: 3 crashes"),
        (.safeModeLeft(reason: "healthy"), .safeModeLeft, "safe_mode_left: healthy"),
        (.overridesRejected(reason: "not JSON"), .overridesRejected, "overrides_rejected: not JSON"),
        (
            .hookFailed(hook: "audit", stage: "before", message: "boom", flag: "promo"), .hookFailed,
            "hook_failed promo: hook \"audit\" failed in before: boom"
        ),
        (.hookDisabled(hook: "slow", stage: "after", elapsedMilliseconds: 80), .hookDisabled, "hook_disabled slow stage=after took=80ms"),
        (.eventsDropped(count: 91), .eventsDropped, "events_dropped count=91"),
    ]

    @Test func everyFactoryGivesItsKindAndOneLogLine() {
        for (event, kind, line) in Self.lines {
            #expect(event.kind == kind)
            #expect(event.description == line)
        }
        #expect(Set(Self.lines.map(\.1.name)).count == 28, "every kind but the two analytics ones (ExposureTests)")
    }

    @Test func accessorsAnswerForTheirKindsOnly() throws {
        let failed = FlagEvent.fetchFailed(.timeout(.seconds(2)))
        #expect(failed.fetchError == .timeout(.seconds(2)) && failed.errorCode == FetchError.timeout(.seconds(2)).errorCode)
        #expect(failed.message == FetchError.timeout(.seconds(2)).description)
        #expect(failed.keys == nil && failed.latencyMilliseconds == nil && failed.killSwitchActive == nil)

        let closed = FlagEvent.streamClosed(stream: "s", reason: "r", retryInMilliseconds: 5)
        #expect(closed.stream == "s" && closed.message == "r" && closed.retryInMilliseconds == 5 && closed.via == nil)
        let loaded = try #require(FlagEvent.fallbackLoaded(contexts: 2, bytes: 9).loaded)
        #expect(loaded.contexts == 2 && loaded.bytes == 9)
        #expect(FlagEvent.ready.loaded == nil && FlagEvent.ready.message == nil && FlagEvent.ready.keys == nil)

        let hook = FlagEvent.hookFailed(hook: "h", stage: "after", message: "m", flag: "f")
        #expect(hook.hook == "h" && hook.hookStage == "after" && hook.keys == ["f"])
        let values = FlagEvent.unknownValues(flag: "f", values: ["a"])
        #expect(values.keys == ["f"] && values.unknownValues == ["a"])
        let rejected = FlagEvent.payloadRejected(violations: [FlagViolation(path: "p", message: "m")], fingerprint: "x")
        #expect(rejected.payloadFingerprint == "x" && rejected.violations?.count == 1 && rejected.message == nil)
        #expect(FlagEvent.stale(age: 5).age == 5 && FlagEvent.activated(version: "v", latencyMilliseconds: 1).version == "v")
        #expect(FlagEvent.fetchCompleted(latencyMilliseconds: 1, outcome: .unchanged).outcome == .unchanged)
        #expect(FlagEvent.fallbackTampered(reason: "r", keptAt: "k").keptAt == "k")
        #expect(FlagEvent.eventsDropped(count: 3).droppedCount == 3 && FlagEvent.ready.droppedCount == nil)
        #expect(FlagEvent.eventsDropped(count: 3).message == nil && FlagEvent.eventsDropped(count: 3).keys == nil)
    }

    /// Flag names, messages and error bodies come from services: none can end a log line,
    /// forge the next one or send a terminal escape.
    @Test func textFromAServiceCannotBreakALogLine() throws {
        let forged = "x\r\n2026-11-28 ERROR forged \u{1B}[2J\u{7F}\u{85}"
        let body = Array(#"{"error":"bad\nERROR forged"}"#.utf8)
        let detail = try #require(FlagEndpoint.json(post: URL(string: "https://flags.example.com/flags")!)
            .failureDetail(FlagResponse(status: 500, headers: [:], body: body)))
        #expect(detail.contains("\n"), "the detail itself is kept as sent")
        let lines = [
            FetchError.httpStatus(500, detail: detail).description,
            FlagEvent.fetchFailed(.httpStatus(500, detail: forged)).description,
            FlagEvent.unknownKeys([forged]).description,
            FlagEvent.unknownValues(flag: forged, values: [forged]).description,
            FlagEvent.activated(version: forged, latencyMilliseconds: 1).description,
            FlagEvent.payloadRejected(violations: [FlagViolation(path: "flags.\(forged)", message: "x")], fingerprint: "f").description,
            FlagViolation(path: forged, message: forged).description,
            FlagError(.parseError, forged).description,
            try #require(FlagEvent.unknownValues(flag: forged, values: ["a"]).metric).description,
        ]
        for line in lines {
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "\(line)")
        }
        #expect(FlagEvent.unknownKeys(["a\nb"]).description == #"unknown_keys a\u{A}b"#)
        #expect(FetchError.httpStatus(500, detail: "bad\nERROR forged").description == #"HTTP 500: bad\u{A}ERROR forged"#)
        #expect(FlagEvent.unknownKeys(["a\nb"]).keys == ["a\nb"], "the accessors give the text as sent")
    }

    @Test func aStaleEventWhoseValuesWereStampedAfterNowSaysTheirAgeIsUnknown() {
        #expect(FlagEvent.stale(age: -3_600.5).description == "stale age=unknown ahead=3600s")
        #expect(FlagEvent.stale(age: -3_600.5).age == -3_600.5, "the accessor gives the figure as emitted")
        #expect(FlagEvent.stale(age: 0).description == "stale age=0s")
    }

    @Test func lifecycleKindsCarryTheirOpenFeatureNames() {
        let named = Self.lines.compactMap { $0.0.openFeatureName }
        #expect(named == [
            "PROVIDER_READY", "PROVIDER_CONFIGURATION_CHANGED", "PROVIDER_STALE", "PROVIDER_ERROR", "PROVIDER_RECONCILING",
            "PROVIDER_CONTEXT_CHANGED",
        ])
    }

    @Test func equalityComparesKindAndDetails() {
        #expect(FlagEvent.killSwitch(active: true) == .killSwitch(active: true))
        #expect(FlagEvent.killSwitch(active: true) != .killSwitch(active: false))
        #expect(FlagEvent.safeModeEntered(reason: "x") != .safeModeLeft(reason: "x"), "same details, another kind")
        #expect(FlagEvent.Kind.ready == .ready && FlagEvent.Kind.ready.hashValue == FlagEvent.Kind.ready.hashValue)
        #expect(!FlagEvent.ready.isAnalytics && !FlagEvent.stale(age: 1).isAnalytics)
    }
}
