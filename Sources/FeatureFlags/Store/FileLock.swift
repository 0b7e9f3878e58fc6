import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive `flock` on a lock file beside the fallback file, held while one process reads, merges and replaces it.
struct FileLock {
    let fd: Int32

    /// Takes the lock, waiting at most `timeout`; a symbolic link at `path` is refused (no file created elsewhere).
    /// A lock file this call creates gets the Data Protection class `protection` (through `protect`).
    static func acquire(
        _ path: String, timeout: Duration = .seconds(2), create: Bool = true, protection: FileProtectionType? = nil,
        protect: (String, FileProtectionType) -> Void = FileIO.protect
    ) throws(FileIOError) -> FileLock {
        var fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0, errno == ENOENT, create {
            fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_CREAT | O_EXCL, 0o600)
            if fd >= 0, let protection { protect(path, protection) }
            // Another process created it in between: open theirs.
            if fd < 0, errno == EEXIST { fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600) }
        }
        guard fd >= 0 else {
            if errno == ELOOP { throw .refused("the lock file \(path) is a symbolic link; not following it") }
            throw .from(errno, "open lock file")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, clock.now < deadline else {
                close(fd)
                throw .refused("the fallback file stayed locked by another process for \(timeout)")
            }
            usleep(2_000)
        }
        return FileLock(fd: fd)
    }

    func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
