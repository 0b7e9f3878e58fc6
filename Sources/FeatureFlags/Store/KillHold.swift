import Foundation

/// The kill switch held on the device: once on for any context, every context is killed until a successful fetch for
/// the served context says off. A reserved fallback-file entry, outside the capacity.
internal struct KillHold: Sendable, Equatable {
    /// When the hold began.
    package var since: Date { Date(timeIntervalSinceReferenceDate: sinceSeconds) }
    /// Seconds since the reference date (a `Date` has no fixed layout: `Support/FixedLayout.swift`).
    private let sinceSeconds: TimeInterval
    /// The fingerprint of the context whose answer turned it on.
    package let context: String

    /// A hold that began at `since`, for the context with fingerprint `context`.
    package init(since: Date, context: String) {
        self.sinceSeconds = since.timeIntervalSinceReferenceDate
        self.context = context
    }

    /// The reserved entry name: not a context fingerprint (those are 32 hex digits).
    static let entryName = "kill-switch-hold"

    /// `u8 version(=1) f64 since string context`.
    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: 48)
        w.u8(1)
        w.u64(since.timeIntervalSince1970.bitPattern)
        w.string(context)
        return w.bytes
    }

    /// The hold in `payload`, or nil when it is not one this build reads.
    static func decode(_ payload: ArraySlice<UInt8>) -> KillHold? {
        payload.withUnsafeBytes { raw -> KillHold? in
            var r = ByteReader(raw)
            guard (try? r.u8()) == 1, let seconds = try? r.finiteDouble(), let context = try? r.string(), r.remaining == 0 else { return nil }
            return KillHold(since: Date(timeIntervalSince1970: seconds), context: context)
        }
    }
}
