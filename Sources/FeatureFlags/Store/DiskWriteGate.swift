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
package struct DiskWriteGate: Sendable {
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
    /// Each write inside `ProcessInfo.performExpiringActivity(withReason:using:)`: the system
    /// keeps the process running until the write returns, or says at once that it will not
    /// (`expired` on the first call), and then the write does not run. The write runs on the
    /// caller's thread while the activity's block waits for it to end, so the block never
    /// holds the write (the system may call the block again, with `expired`, while the write
    /// runs: that call returns at once). Only an Apple build compiles this (listed in
    /// Docs/Architecture.md); its decision — run, or keep the change in memory — is the one the
    /// Linux tests drive through a refusing gate.
    package static let expiringActivity = DiskWriteGate { name, write in
        let granted = Locked<Bool?>(nil)
        let decided = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        ProcessInfo.processInfo.performExpiringActivity(withReason: name) { expired in
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
    #endif
}
