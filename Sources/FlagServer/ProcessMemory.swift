import FeatureFlags
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
@preconcurrency import Darwin
#endif
import Foundation

/// The process's resident memory, for the benchmarks and the tests that bound memory.
package enum ProcessMemory {
    /// Resident set size in bytes: `/proc/self/statm` on Linux, `task_info` on Apple
    /// platforms; nil where neither exists.
    package static func residentBytes() -> Int? {
        #if canImport(Darwin)
        var info = mach_task_basic_info()
        var count = mach_msg_type_number_t(MemoryLayout<mach_task_basic_info>.size / MemoryLayout<natural_t>.size)
        let result = withUnsafeMutablePointer(to: &info) {
            $0.withMemoryRebound(to: integer_t.self, capacity: Int(count)) {
                task_info(mach_task_self_, task_flavor_t(MACH_TASK_BASIC_INFO), $0, &count)
            }
        }
        return result == KERN_SUCCESS ? Int(info.resident_size) : nil
        #else
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #endif
    }

    /// Hands memory the allocator holds free back to the system (glibc's `malloc_trim`; a
    /// no-op elsewhere), so that ``residentBytes()`` then counts what is still in use rather
    /// than what was used for a moment.
    package static func releaseFreeMemory() { returnFreeMemoryToTheSystem() }
}
