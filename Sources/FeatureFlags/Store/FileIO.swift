package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file operation failed.
package enum FileIOError: Error, Equatable, CustomStringConvertible {
    case notFound
    case permissionDenied
    case isDirectory
    case notRegularFile
    case tooLarge(Int)
    case refused(String)
    case system(operation: String, errno: Int32)

    package var description: String {
        switch self {
        case .notFound: return "no such file"
        case .permissionDenied: return "permission denied"
        case .isDirectory: return "a directory stands where the file should be"
        case .notRegularFile: return "not a regular file"
        case .tooLarge(let n): return "file too large (\(n) bytes)"
        case .refused(let why): return why
        case .system(let op, let code): return "\(op) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    static func from(_ code: Int32, _ operation: String) -> FileIOError {
        switch code {
        case ENOENT: return .notFound
        case EACCES, EPERM: return .permissionDenied
        case EISDIR: return .isDirectory
        default: return .system(operation: operation, errno: code)
        }
    }
}

/// POSIX file helpers: whole-file reads that never block on special files, and atomic replacement with mode 0600.
package enum FileIO {
    /// Files larger than this are refused rather than read into memory.
    package static let maxReadSize = 64 << 20

    /// The whole content of the regular file at `path`.
    package static func read(_ path: String) throws(FileIOError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { throw .from(errno, "open") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .from(errno, "fstat") }
        let kind = info.st_mode & S_IFMT
        if kind == S_IFDIR { throw .isDirectory }
        guard kind == S_IFREG else { throw .notRegularFile }
        let size = Int(info.st_size)
        guard size <= maxReadSize else { throw .tooLarge(size) }
        var bytes = [UInt8](repeating: 0, count: size)
        var filled = 0
        var failure: FileIOError?
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while filled < size {
                let n = sysRead(fd, base + filled, size - filled)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .from(errno, "read")
                    return
                }
                if n == 0 { break }  // shrank while reading
                filled += n
            }
        }
        if let failure { throw failure }
        if filled < size { bytes.removeLast(size - filled) }
        return bytes
    }

    /// Gives the file at `path` the Data Protection class `protection` (Apple platforms; elsewhere there is none).
    /// Best effort: a volume without Data Protection (a Mac's, the simulator's) keeps the file as it is.
    package static func protect(_ path: String, _ protection: FileProtectionType) {
        #if canImport(Darwin)
        try? FileManager.default.setAttributes([.protectionKey: protection], ofItemAtPath: path)
        #endif
    }

    /// Replaces `path` crash-safely (temp file 0600, fsync, rename, directory fsync); creates the directory (0700) if missing.
    /// With `protection`, the temp file gets that Data Protection class (through `protect`) before a byte is written.
    package static func writeAtomically(
        _ bytes: [UInt8], to path: String, protection: FileProtectionType? = nil,
        protect: (String, FileProtectionType) -> Void = FileIO.protect
    ) throws(FileIOError) {
        let directory = parentDirectory(of: path)
        try makeDirectory(directory)
        let name = path.split(separator: "/").last.map(String.init) ?? "file"
        let temp = "\(directory)/.\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .from(errno, "create temp file") }
        var failure: FileIOError?
        if fchmod(fd, 0o600) != 0 { failure = .from(errno, "fchmod") }
        if failure == nil, let protection { protect(temp, protection) }
        if failure == nil { failure = writeAll(fd, bytes) }
        if failure == nil, fsync(fd) != 0 { failure = .from(errno, "fsync") }
        if close(fd) != 0, failure == nil { failure = .from(errno, "close") }
        if failure == nil, rename(temp, path) != 0 { failure = .from(errno, "rename") }
        if let failure {
            unlink(temp)
            throw failure
        }
        syncDirectory(directory)
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> FileIOError? {
        bytes.withUnsafeBytes { buffer -> FileIOError? in
            guard let base = buffer.baseAddress else { return nil }
            var written = 0
            while written < buffer.count {
                let n = write(fd, base + written, buffer.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    return .from(errno, "write")
                }
                written += n
            }
            return nil
        }
    }

    /// Removes temp files a dead writer left beside `path`; call only under the file's lock.
    package static func removeStaleTempFiles(besides path: String) {
        let directory = parentDirectory(of: path)
        let prefix = "." + (path.split(separator: "/").last.map(String.init) ?? "file") + ".tmp-"
        guard let dir = opendir(directory) else { return }
        defer { closedir(dir) }
        var names: [String] = []   // unlinked after the listing: removing while reading may skip entries
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name.hasPrefix(prefix) { names.append(name) }
        }
        for name in names { unlink("\(directory)/\(name)") }
    }

    /// A free path for an unusable file: `<path>.corrupt`, else `-2` … `-9` (`-9` is reused).
    package static func quarantinePath(for path: String) -> String {
        var info = stat()
        let candidates = [path + ".corrupt"] + (2...9).map { "\(path).corrupt-\($0)" }
        return candidates.first { lstat($0, &info) != 0 } ?? candidates[candidates.count - 1]
    }

    /// Flushes the directory entry of a rename to disk; best effort.
    private static func syncDirectory(_ directory: String) {
        let dfd = open(directory, O_RDONLY | O_CLOEXEC | O_DIRECTORY)
        guard dfd >= 0 else { return }
        _ = fsync(dfd)
        close(dfd)
    }

    /// Moves the file at `path` to `destination`, replacing any file there.
    package static func move(_ path: String, to destination: String) throws(FileIOError) {
        guard rename(path, destination) == 0 else { throw .from(errno, "rename") }
        syncDirectory(parentDirectory(of: path))
    }

    /// Creates `path` and its missing parents with mode 0700.
    package static func makeDirectory(_ path: String) throws(FileIOError) {
        if path.isEmpty || path == "/" { return }
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw .system(operation: "mkdir \(path)", errno: ENOTDIR) }
            return
        }
        try makeDirectory(parentDirectory(of: path))
        if mkdir(path, 0o700) != 0, errno != EEXIST { throw .from(errno, "mkdir") }
    }

    /// A warning when `path` is owned by another user or open to others (as ssh checks keys).
    package static func ownershipWarning(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        if info.st_uid != geteuid() { return "the fallback file \(path) is owned by another user (uid \(info.st_uid)); its flags are used, but anyone who owns it decides them" }
        let mode = UInt32(info.st_mode) & 0o777
        if mode & 0o077 != 0 {
            return "the fallback file \(path) is open to other users (mode \(String(mode, radix: 8))); it should be 0600"
        }
        return nil
    }

    /// Everything before the last `/` (`"."` when there is none).
    package static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let parent = String(path[..<slash])
        return parent.isEmpty ? "/" : parent
    }
}

#if canImport(Darwin)
private func sysRead(_ fd: Int32, _ buf: UnsafeMutableRawPointer, _ count: Int) -> Int { Darwin.read(fd, buf, count) }
#elseif canImport(Musl)
private func sysRead(_ fd: Int32, _ buf: UnsafeMutableRawPointer, _ count: Int) -> Int { Musl.read(fd, buf, count) }
#else
private func sysRead(_ fd: Int32, _ buf: UnsafeMutableRawPointer, _ count: Int) -> Int { Glibc.read(fd, buf, count) }
#endif
