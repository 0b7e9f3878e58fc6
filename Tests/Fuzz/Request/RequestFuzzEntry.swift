// libFuzzer entry point for the flag server's request-head parser. Not part of the package
// build: `.ci/fuzz request` compiles this file with Sources/FlagServer/HTTPRequestHead.swift
// alone (it depends on Foundation only) under `-sanitize=fuzzer,address`.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = ArraySlice(UnsafeBufferPointer(start: data, count: size))
    switch HTTPRequestHead.parse(bytes) {
    case .success(let head):
        precondition(head.path.isEmpty || head.path.hasPrefix("/") || head.path.contains("%"), "a path that is not a path")
        _ = head.keepAlive
        precondition(!head.method.isEmpty, "an empty method was accepted")
    case .failure(let rejection):
        precondition([400, 505].contains(rejection.status), "unexpected status \(rejection.status)")
    }
    _ = HTTPRequestHead.splitTarget(String(decoding: bytes, as: UTF8.self))
    return 0
}
