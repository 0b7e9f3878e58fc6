import Foundation

/// Gates fallback-file writes so iOS never suspends the app holding a file lock (`0xdead10cc`): the lock lives inside one
/// synchronous write, never across `await`; without granted time the write does not start (the change stays in memory).
internal struct DiskWriteGate: Sendable {
    /// Runs `write` if it may run now and returns true, or returns false without running it.
    let perform: @Sendable (_ name: String, _ write: () -> Void) -> Bool

    /// Every write runs at once: where processes are not suspended (Linux, tools).
    package static let immediate = DiskWriteGate { _, write in
        write()
        return true
    }

    /// The platform's gate: ``expiringActivity`` on Apple platforms, ``immediate`` elsewhere.
    package static var system: DiskWriteGate {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        return expiringActivity
        #else
        return immediate
        #endif
    }

    #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
    /// Each write inside `ProcessInfo.performExpiringActivity` (a Mac app is not suspended mid-call).
    package static let expiringActivity = DiskWriteGate.activity { name, block in
        ProcessInfo.processInfo.performExpiringActivity(withReason: name, using: block)
    }
    #endif

    /// Each write inside an activity started by `begin` (whose block may be called twice, the second time expired); the
    /// write runs on the caller's thread only once granted, while the block waits. `begin` is the only platform seam.
    package static func activity(
        _ begin: @escaping @Sendable (_ name: String, _ block: @escaping @Sendable (_ expired: Bool) -> Void) -> Void
    ) -> DiskWriteGate {
        DiskWriteGate { name, write in
            let granted = Locked<Bool?>(nil)
            let decided = DispatchSemaphore(value: 0)
            let finished = DispatchSemaphore(value: 0)
            begin(name) { expired in
                let first = granted.withLock { state -> Bool in
                    guard state == nil else { return false }
                    state = !expired
                    return true
                }
                guard first else { return }
                decided.signal()
                if !expired { finished.wait() }  // keep the activity until the write has run
            }
            decided.wait()
            guard granted.withLock({ $0 }) == true else { return false }
            write()
            finished.signal()
            return true
        }
    }
}
