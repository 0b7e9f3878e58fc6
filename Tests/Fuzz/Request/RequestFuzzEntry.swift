// libFuzzer entry point for the flag server's request-head parser and request framing. Not
// part of the package build: `.ci/fuzz request` compiles this file with
// Sources/FlagServer/HTTPRequestHead.swift and HTTPFraming.swift alone (they depend on
// Foundation only) under `-sanitize=fuzzer,address`.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let all = Array(UnsafeBufferPointer(start: data, count: size))
    let bytes = ArraySlice(all)
    switch HTTPRequestHead.parse(bytes) {
    case .success(let head):
        precondition(
            head.path.isEmpty || head.path.hasPrefix("/") || head.path.contains("%") || (head.path == "*" && head.method == "OPTIONS"),
            "a path that is not a path")
        _ = head.keepAlive
        precondition(!head.method.isEmpty, "an empty method was accepted")
        switch HTTPFraming.body(of: head) {
        case .success(.length(let length)): precondition(length >= 0, "a negative length")
        case .success(.chunked): precondition(head.headers["content-length"] == nil, "chunked beside a length")
        case .failure(let rejection): precondition([400, 501].contains(rejection.status), "unexpected framing status \(rejection.status)")
        }
    case .failure(let rejection):
        precondition([400, 505].contains(rejection.status), "unexpected status \(rejection.status)")
    }
    _ = HTTPRequestHead.splitTarget(String(decoding: bytes, as: UTF8.self))

    // The head's end, searched at once and resumed from where a shorter buffer stopped.
    let end = HTTPFraming.headEnd(in: all)
    if let end { precondition(end.head < end.next && end.next <= all.count, "a head end outside the bytes") }
    let cut = all.isEmpty ? 0 : Int(all[0]) % (all.count + 1)
    if HTTPFraming.headEnd(in: Array(all[..<cut])) == nil {
        let resumed = HTTPFraming.headEnd(in: all, from: HTTPFraming.resumePoint(after: cut))
        precondition(resumed?.head == end?.head && resumed?.next == end?.next, "a resumed search found another end")
    }
    let blank = HTTPFraming.leadingEmptyLines(all)
    precondition(blank <= all.count, "more empty lines than bytes")
    let refusal = HTTPFraming.tooLarge(all, limit: Int(all.last ?? 0))
    precondition([414, 431].contains(refusal.status), "unexpected size refusal \(refusal.status)")

    // The chunked decoder: fed at once and in two pieces it agrees, and stays in its bounds.
    var whole = ChunkedBodyDecoder(maxBodyBytes: 512, maxFramingBytes: 256)
    let step = whole.advance(all)
    var pieces = ChunkedBodyDecoder(maxBodyBytes: 512, maxFramingBytes: 256)
    var piecewise = pieces.advance(Array(all[..<cut]))
    if piecewise == .more { piecewise = pieces.advance(all) }
    precondition(piecewise == step && pieces.body == whole.body, "pieces decode differently from the whole")
    precondition(whole.body.count <= 512, "a body past its limit")
    switch step {
    case .done(let consumed): precondition(consumed <= all.count && consumed >= 5, "consumed outside the bytes")
    case .reject(let rejection): precondition([400, 413].contains(rejection.status), "unexpected chunk status \(rejection.status)")
    case .more: break
    }
    return 0
}
