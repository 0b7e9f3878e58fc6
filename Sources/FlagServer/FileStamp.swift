#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file's modification time, size and inode: an edit or an atomic replace changes it.
/// For noticing that a file changed (the flag server's hot reload) or did not (tests that a
/// poll rewrote nothing), on every platform's `stat`.
package struct FileStamp: Equatable, Sendable {
    package let seconds: Int
    package let nanoseconds: Int
    package let size: Int
    package let inode: UInt64

    /// The stamp of the file at `path`; nil if it cannot be read.
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        seconds = Int(modified.tv_sec)
        nanoseconds = Int(modified.tv_nsec)
        size = Int(info.st_size)
        inode = UInt64(info.st_ino)
    }
}
