import Foundation

/// Reports each context's first read of each flag value as a ``FlagEvent/exposure(_:)`` event,
/// behind a lock-free filter of reported name hashes cleared when the served values change.
internal final class ExposureLog: Sendable {
    /// Name hashes known to be reported for what is served now. Immutable.
    private final class Filter: Sendable {
        let hashes: [Int]
        init(_ hashes: [Int]) { self.hashes = hashes }

        @inline(__always)
        func contains(_ hash: Int) -> Bool {
            var low = 0
            var high = hashes.count
            while low < high {
                let mid = (low + high) >> 1
                let value = hashes[mid]
                if value == hash { return true }
                if value < hash { low = mid + 1 } else { high = mid }
            }
            return false
        }

        func adding(_ hash: Int) -> Filter {
            var hashes = self.hashes
            let index = hashes.firstIndex { $0 > hash } ?? hashes.count
            hashes.insert(hash, at: index)
            return Filter(hashes)
        }
    }

    /// The most exposures remembered; past it the record starts afresh (bounded memory).
    package static let capacity = 10_000

    private let filter = ReadPublication(Filter([]))
    private let reported = Locked(Set<String>())
    private let detail: EventContextDetail
    private let base: ServingBase
    private let now: @Sendable () -> Date
    private let emit: @Sendable (FlagEvent) -> Void

    /// A log reporting through `emit`, with contexts shown as `detail` allows.
    package init(detail: EventContextDetail, base: ServingBase, now: @escaping @Sendable () -> Date, emit: @escaping @Sendable (FlagEvent) -> Void) {
        self.detail = detail
        self.base = base
        self.now = now
        self.emit = emit
    }

    /// Whether the flag with name hash `hash` is known to be reported already.
    @inline(__always)
    package func isKnown(_ hash: Int) -> Bool { filter.read { $0.contains(hash) } }

    /// Reports the read of `name` from `view`, unless this context read this value before.
    package func note(_ name: String, hash: Int, in view: ServedView) {
        let details = view.rawDetails(name, hash: hash, base: base, now: now())
        guard Self.isExposure(details.source) else {
            reported.withLock { _ in filter.publish(filter.read { $0 }.adding(hash)) }
            return
        }
        let identity = details.variant.map { "v:" + $0 } ?? details.value.map { "j:" + FlagJSON.string($0, sortedKeys: true) } ?? "-"
        let context = EventContext(of: view.served, detail: detail)
        let key = "\(context.fingerprint)\u{0}\(name)\u{0}\(identity)"
        let first = reported.withLock { seen -> Bool in
            if seen.count >= Self.capacity { seen.removeAll() }
            let first = seen.insert(key).inserted
            filter.publish(filter.read { $0 }.adding(hash))
            return first
        }
        guard first else { return }
        emit(
            .exposure(
                FlagExposure(
                    flag: name, value: details.value, variant: details.variant, reason: details.reason, source: details.source,
                    context: context)))
    }

    /// Forgets the filter: the served values or the context changed.
    package func servedChanged() {
        reported.withLock { _ in filter.publish(Filter([])) }
    }

    /// Whether a read from `source` is an exposure (not kill switch, override or code default).
    static func isExposure(_ source: FlagSource) -> Bool {
        source == .network || source == .fallback || source == .bundledDefaults
    }
}
