import Foundation

/// HTTPS always, except to loopback addresses or when the app opts in to plain HTTP.
enum URLPolicy {
    /// Whether `host` names this machine: `localhost`, `127.0.0.0/8` or `::1`.
    static func isLoopback(_ host: String) -> Bool {
        let h = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if h == "localhost" || h.hasSuffix(".localhost") || h == "::1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in Int(part).map { (0...255).contains($0) } ?? false }
    }

    /// Throws unless `url` may be fetched.
    static func check(_ url: URL, allowInsecureHTTP: Bool) throws(FetchError) {
        let scheme = url.scheme?.lowercased()
        let host = url.host ?? ""
        switch scheme {
        case "https": return
        case "http":
            if allowInsecureHTTP || isLoopback(host) { return }
            throw .insecureURL(host: host)
        default:
            throw .invalidRequest(FlagError(.general, "unsupported URL scheme \(scheme ?? "none")"))
        }
    }
}
