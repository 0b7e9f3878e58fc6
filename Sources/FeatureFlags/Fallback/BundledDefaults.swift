public import Foundation

/// Defaults shipped with the app: the layer beneath every snapshot, served when a flag is
/// missing from the snapshot (source `bundled_defaults`, reason `STATIC`).
public struct BundledDefaults: Sendable {
    private enum Storage: Sendable {
        case values([String: FlagValue])
        case file(URL)
    }

    private let storage: Storage

    /// No bundled defaults: missing flags read as their code default.
    public static let none = BundledDefaults(storage: .values([:]))

    /// Defaults from a dictionary.
    public static func values(_ values: [String: FlagValue]) -> BundledDefaults {
        BundledDefaults(storage: .values(values))
    }

    /// Defaults from a JSON file holding one object of flag names to values, e.g.
    /// `{"new_checkout": false, "plan_themeColor": "#3498DB"}`. Read when a client is created;
    /// a missing or invalid file yields no defaults and an error event.
    public static func jsonFile(_ url: URL) -> BundledDefaults {
        BundledDefaults(storage: .file(url))
    }

    /// The defaults as entries, or why they could not be read.
    func load() -> Result<[String: FlagEntry], BundledDefaultsError> {
        switch storage {
        case .values(let values):
            return .success(values.mapValues { FlagEntry(value: $0) })
        case .file(let url):
            do {
                let bytes = try FileIO.read(url.fileSystemPath)
                guard case .object(let members) = try FlagJSON.parse(bytes) else {
                    return .failure(BundledDefaultsError(message: "bundled defaults file is not a JSON object"))
                }
                return .success(members.mapValues { FlagEntry(value: $0) })
            } catch {
                return .failure(BundledDefaultsError(message: "bundled defaults file unusable: \(error)"))
            }
        }
    }
}

/// Why bundled defaults could not be read.
struct BundledDefaultsError: Error {
    let message: String
}
