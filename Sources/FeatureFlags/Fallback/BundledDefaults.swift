public import Foundation

/// Defaults shipped with the app, served for flags the snapshot lacks (`bundled_defaults`, `STATIC`).
public struct BundledDefaults: Sendable {
    private enum Storage: Sendable {
        case values([String: FlagValue])
        case file(URLReference)
        case signedFile(URLReference, trust: SignatureTrust)
    }

    private let storage: Storage

    /// No bundled defaults: missing flags read as their code default.
    public static let none = BundledDefaults(storage: .values([:]))

    /// Defaults from a dictionary.
    public static func values(_ values: [String: FlagValue]) -> BundledDefaults {
        BundledDefaults(storage: .values(values))
    }

    /// Defaults from a JSON file (a flag document or a flat name-to-value map), read at client
    /// creation; an unusable file yields no defaults and a `PARSE_ERROR` event naming the problem.
    public static func jsonFile(_ url: URL) -> BundledDefaults {
        BundledDefaults(storage: .file(URLReference(url)))
    }

    /// Defaults from a signed file, verified by `trust` (made by FeatureFlagsSigning).
    package static func signedJSONFile(_ url: URL, trust: SignatureTrust) -> BundledDefaults {
        BundledDefaults(storage: .signedFile(URLReference(url), trust: trust))
    }

    /// The defaults as entries, or why they could not be read.
    func load() -> Result<[String: FlagEntry], BundledDefaultsError> {
        switch storage {
        case .values(let values):
            return .success(values.mapValues { FlagEntry(value: $0) })
        case .file(let file):
            return Self.read(file.url, verifier: nil)
        case .signedFile(let file, let trust):
            return Self.read(file.url, verifier: trust.verifier)
        }
    }

    /// The file's flags, or why not, named by the file.
    private static func read(
        _ url: URL, verifier: TrustedVerifier?
    ) -> Result<[String: FlagEntry], BundledDefaultsError> {
        entries(url, verifier: verifier).mapError {
            BundledDefaultsError(message: "bundled defaults \(url.lastPathComponent): \($0.message)")
        }
    }

    private static func entries(
        _ url: URL, verifier: TrustedVerifier?
    ) -> Result<[String: FlagEntry], BundledDefaultsError> {
        var bytes: [UInt8]
        let top: FlagValue
        do {
            bytes = try FileIO.read(url.fileSystemPath)
        } catch {
            return .failure(BundledDefaultsError(message: "cannot be read: \(error)"))
        }
        if let verifier {
            let keys: any DocumentVerifier
            do {
                keys = try verifier.get()
            } catch {
                return .failure(BundledDefaultsError(message: error.message))
            }
            switch keys.verify(bytes) {
            case .success(let verified): bytes = verified.payload
            case .failure(let failure): return .failure(BundledDefaultsError(message: "signature rejected: \(failure.description)"))
            }
        }
        do {
            top = try FlagJSON.parse(bytes)
        } catch {
            return .failure(BundledDefaultsError(message: error.description))
        }
        guard case .object(let members) = top else {
            return .failure(BundledDefaultsError(
                message: "is a JSON \(top.typeName), expected a flag document or an object of flag names to values"))
        }
        let entries: [String: FlagEntry]
        do {
            if case .object? = members["flags"] {
                entries = try FlagDocument(parsing: top).flags  // a flag document
            } else {
                entries = try FlagDocument.flags(members)  // a flat map
            }
        } catch {
            return .failure(BundledDefaultsError(message: error.message))
        }
        // A default keeps value, variant and metadata; a service's reason or error code does not apply.
        let defaults = entries.compactMapValues { entry in
            entry.value.map { FlagEntry(value: $0, variant: entry.variant, metadata: entry.metadata) }
        }
        guard !defaults.isEmpty else { return .failure(BundledDefaultsError(message: "holds no flag values")) }
        return .success(defaults)
    }
}

/// Why bundled defaults could not be read.
struct BundledDefaultsError: Error {
    let message: String
}
