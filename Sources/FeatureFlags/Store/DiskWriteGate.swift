import Foundation

/// Decides whether a write of the fallback file may start now, and keeps the process from
/// being suspended until it ends.
///
/// iOS kills an app that is suspended while it holds a file lock in an App Group container
/// (exception code `0xdead10cc`). The store's lock is only ever held inside one synchronous
/// write — taken, the file read, merged and replaced, released, all in one call, never across
/// an `await` — so the one danger is a suspension in the middle of that call. The gate closes
/// it: on Apple platforms each write runs inside `ProcessInfo.performExpiringActivity`, which
/// asks the system for time to finish (apps and extensions alike); when the system answers
/// that no time is left, the write does not start, the lock is not taken, and the change stays
/// in memory, written with the next write (after the app returns to the foreground and fetches).
internal struct DiskWriteGate: Sendable {
    /// Runs `write` if it may run now and returns true, or returns false without running it.
    package let perform: @Sendable (_ name: String, _ write: () -> Void) -> Bool

    /// A gate from its function (tests pass one that refuses).
    package init(perform: @escaping @Sendable (_ name: String, _ write: () -> Void) -> Bool) {
        self.perform = perform
    }

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
    /// Each write inside `ProcessInfo.performExpiringActivity(withReason:using:)`, which exists
    /// on iOS, tvOS, watchOS and visionOS (a Mac app is not suspended in the middle of a call).
    package static let expiringActivity = DiskWriteGate.activity { name, block in
        ProcessInfo.processInfo.performExpiringActivity(withReason: name, using: block)
    }
    #endif

    /// Each write inside an expiring activity started by `begin` — `performExpiringActivity`'s
    /// contract: the activity calls its block (on a thread of its own) with `expired` false while
    /// the process may keep running until the block returns, or true when it may not; it may
    /// call the block a second time, with true, while the first call still runs.
    ///
    /// The write runs on the caller's thread, and only after the activity granted time; the
    /// activity's block waits until the write has returned, so the system keeps the process
    /// running for all of it, and the block never holds the (non-escaping) write. A first call
    /// with `expired` true refuses the write; a later call returns at once. The platform seam is
    /// `begin` alone, so the Linux tests drive this logic with activities of their own.
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
