import Foundation

/// Returns the memory the allocator keeps free to the system: glibc's `malloc_trim` on Linux
/// (after a burst of garbage, glibc keeps what it freed); nothing elsewhere, where the
/// allocator returns it by itself. Takes a few milliseconds: call it after rare bursts only.
package func returnFreeMemoryToTheSystem() {
    #if canImport(Glibc)
    typealias Trim = @convention(c) (Int) -> Int32
    if let symbol = dlsym(dlopen(nil, RTLD_NOW), "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
    #endif
}
