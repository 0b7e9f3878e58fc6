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
        #if canImport(Darwin) && !os(macOS)
        return expiringActivity
        #else
        return immediate
        #endif
    }

    #if canImport(Darwin)
    /// Each write inside `ProcessInfo.performExpiringActivity(withReason:using:)`: the system
    /// keeps the process running until the write returns, or says at once that it will not
    /// (`expired` on the first call), and then the write does not run. Only an Apple build
    /// exercises this function (listed in Docs/Architecture.md); its decision — run or keep the
    /// change in memory — is the one the tests drive through a refusing gate.
    package static let expiringActivity = DiskWriteGate { name, write in
        let ran = Locked<Bool?>(nil)
        let done = DispatchSemaphore(value: 0)
        withoutActuallyEscaping(write) { write in
            nonisolated(unsafe) let write = write  // called at most once, before `done` is signalled
            ProcessInfo.processInfo.performExpiringActivity(withReason: name) { expired in
                // The block runs once with `false` (time granted) and maybe again with `true`
                // while the first still runs (time is nearly up: the write, milliseconds, ends
                // first). A first call with `true` means no time at all: do not start.
                let first = ran.withLock { state -> Bool in
                    guard state == nil else { return false }
                    state = !expired
                    return true
                }
                guard first else { return }
                if !expired { write() }
                done.signal()
            }
            done.wait()
        }
        return ran.withLock { $0 } ?? false
    }
    #endif
}
