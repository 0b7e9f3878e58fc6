public import FeatureFlags
public import Foundation

/// The storage module: keeps receipts and purges them after the retention the flags allow.
public final class ReceiptStore: @unchecked Sendable {
    // @unchecked: `receipts` is only touched while holding `lock`.
    /// One stored receipt.
    public struct Receipt: Sendable, Equatable {
        /// The order it belongs to.
        public let orderID: String
        /// When it was printed.
        public let date: Date

        /// A receipt.
        public init(orderID: String, date: Date) {
            self.orderID = orderID
            self.date = date
        }
    }

    private let flags: any FeatureFlagClient
    private let lock = NSLock()
    private var receipts: [Receipt] = []

    /// A store that reads its retention from `flags`.
    public init(flags: any FeatureFlagClient) { self.flags = flags }

    /// Keeps `receipt`.
    public func add(_ receipt: Receipt) { lock.withLock { receipts.append(receipt) } }

    /// Everything kept, oldest first.
    public var all: [Receipt] { lock.withLock { receipts.sorted { $0.date < $1.date } } }

    /// Drops receipts older than the retention period at `now`; returns how many went.
    @discardableResult
    public func purge(now: Date) -> Int {
        let days = min(max(flags.value(POSFlags.receiptRetentionDays), 1), 3_650)
        let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
        return lock.withLock {
            let before = receipts.count
            receipts.removeAll { $0.date < cutoff }
            return before - receipts.count
        }
    }
}
