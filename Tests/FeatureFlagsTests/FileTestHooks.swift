#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

@testable import FeatureFlags

/// What the tests ask of files that an app never needs.
extension FileIO {
    /// The permission bits of the file at `path`, or nil if it cannot be stat'ed.
    static func permissions(_ path: String) -> UInt32? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode) & 0o777
    }
}

extension FileLock {
    /// The lock if its file exists and no other process holds it now, else nil (never waits,
    /// never creates the lock file; errors are nil too).
    static func tryAcquireExisting(_ path: String) -> FileLock? {
        try? acquire(path, timeout: .zero, create: false)
    }
}
