#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive advisory lock (`flock`) on a lock file beside the fallback file, held while
/// one process reads, merges and replaces the file. Waits up to two seconds for another
/// process to finish, then gives up with an error rather than block the caller forever.
struct FileLock {
    let fd: Int32

    static func acquire(_ path: String, timeout: Duration = .seconds(2)) throws(FileIOError) -> FileLock {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .from(errno, "open lock file") }
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
