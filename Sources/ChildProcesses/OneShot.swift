import FeatureFlags

/// Fires once; waiting after it fired returns at once.
package final class OneShot: Sendable {
    private let state = Locked<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// A shot not yet fired.
    package init() {}

    /// Whether it has fired.
    package var fired: Bool { state.withLock { $0.fired } }

    /// Fires it: every wait, past and future, returns.
    package func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.fired = true
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once it has fired, without holding a thread.
    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { s -> Bool in
                if !s.fired { s.waiters.append(continuation) }
                return s.fired
            }
            if fired { continuation.resume() }
        }
    }
}
