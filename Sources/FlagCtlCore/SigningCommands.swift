import FeatureFlags
import FeatureFlagsSigning
import FlagServer
import Foundation

/// `flagctl keygen`, `sign` and `verify`: an operator's Ed25519 keys and signed flag documents
/// (Docs/Security.md, "Signed flags"). The key files are the ones `openssl genpkey -algorithm
/// ed25519` and `openssl pkey -pubout` write; a signed document is a compact JWS (`"alg": "Ed25519"`)
/// whose payload is the document's own bytes.
enum SigningCommands {
    static let keygen = CommandSpec(
        name: "keygen", summary: "make an Ed25519 key pair for signing flag documents",
        positionals: ["NAME"],
        options: [],
        examples: ["flagctl keygen ops-2026     # writes ops-2026.pem (private) and ops-2026.pub.pem"],
        exitStatuses: [(0, "both files written"), (64, "usage error"), (73, "a file exists already or cannot be written")])

    static let sign = CommandSpec(
        name: "sign", summary: "sign a flag document (JSON, flagd rules) as a compact JWS",
        positionals: ["FILE"],
        options: [
            .init(name: "key", value: "KEY.pem", help: "the Ed25519 private key (required)"),
            .init(name: "kid", value: "ID", help: "the key id apps trust the key under (recommended)"),
            .init(name: "expires-in", value: "SECONDS", help: "apps treat the document as stale this long after signing"),
            .init(name: "out", value: "PATH", help: "write the signed document here (default: standard output)"),
        ],
        examples: ["flagctl sign flags.json --key ops-2026.pem --kid ops-2026 --out flags.jws"],
        exitStatuses: [(0, "signed"), (64, "usage error"), (66, "the file or the key cannot be read")])

    static let verify = CommandSpec(
        name: "verify", summary: "check a signed flag document against a public key",
        positionals: ["FILE"],
        options: [
            .init(name: "key", value: "PUB.pem", help: "the Ed25519 public key (required)"),
            .init(name: "kid", value: "ID", help: "the id the key is trusted under (default: any)"),
            .init(name: "print", value: nil, help: "print the document that was signed"),
        ],
        examples: ["flagctl verify flags.jws --key ops-2026.pub.pem --kid ops-2026"],
        exitStatuses: [(0, "the signature verifies"), (1, "it does not (the reason is printed)"), (64, "usage error"), (66, "the file or the key cannot be read")])

    static let exitNoInput: Int32 = 66
    static let exitCannotCreate: Int32 = 73

    static func runKeygen(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        let name = arguments.positionals[0]
        let privatePath = name + ".pem"
        let publicPath = name + ".pub.pem"
        for path in [privatePath, publicPath] where FileManager.default.fileExists(atPath: path) {
            console.err("flagctl keygen: \(path) exists already; nothing written")
            return exitCannotCreate
        }
        var generator = SystemRandomNumberGenerator()
        let seed = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        // The private key is readable by its owner only, from its first byte on disk.
        guard FileManager.default.createFile(
            atPath: privatePath, contents: Data(SigningKeys.privateKeyPEM(seed).utf8), attributes: [.posixPermissions: 0o600])
        else {
            console.err("flagctl keygen: cannot write \(privatePath)")
            return exitCannotCreate
        }
        guard FileManager.default.createFile(atPath: publicPath, contents: Data(SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: seed)).utf8))
        else {
            console.err("flagctl keygen: cannot write \(publicPath)")
            return exitCannotCreate
        }
        console.out("private key: \(privatePath) (keep it where only the signing step can read it)")
        console.out("public key:  \(publicPath) (ship it in the app: FlagFetcher.Configuration.trustedKeys)")
        return 0
    }

    static func runSign(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        guard let keyPath = arguments.value("key") else { throw UsageError(message: "--key KEY.pem is required") }
        let expiresIn = try expiresIn(arguments)
        guard let document = read(arguments.positionals[0], console: console, command: "sign") else { return exitNoInput }
        guard let keyText = read(keyPath, console: console, command: "sign"), let seed = SigningKeys.privateKey(String(decoding: keyText, as: UTF8.self))
        else {
            console.err("flagctl sign: \(keyPath) holds no Ed25519 private key (a PRIVATE KEY PEM block)")
            return exitNoInput
        }
        let now = Date()
        let signed = JWS.sign(document, seed: seed, keyID: arguments.value("kid"), issuedAt: now, expiresAt: expiresIn.map { now + $0 })
        if let out = arguments.value("out") {
            do {
                try Data(signed + [0x0a]).write(to: URL(fileURLWithPath: out), options: .atomic)
            } catch {
                console.err("flagctl sign: cannot write \(out): \(error.localizedDescription)")
                return exitCannotCreate
            }
        } else {
            console.out(String(decoding: signed, as: UTF8.self))
        }
        return 0
    }

    static func runVerify(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        guard let keyPath = arguments.value("key") else { throw UsageError(message: "--key PUB.pem is required") }
        guard let document = read(arguments.positionals[0], console: console, command: "verify") else { return exitNoInput }
        guard let keyText = read(keyPath, console: console, command: "verify") else { return exitNoInput }
        let keys: TrustedKeys
        do {
            keys = try TrustedKeys([arguments.value("kid") ?? "": String(decoding: keyText, as: UTF8.self)])
        } catch {
            console.err("flagctl verify: \(keyPath) holds no Ed25519 public key (a PUBLIC KEY PEM block)")
            return exitNoInput
        }
        // Without --kid the key verifies whatever key id the document names.
        let trusted = arguments.value("kid") == nil ? keys.anyKeyID : keys
        switch JWS.verify(document, trusting: trusted) {
        case .success(let verified):
            var line = "verified"
            if !verified.keyID.isEmpty { line += " · key \(Formatting.printable(verified.keyID))" }
            if let issued = verified.issuedAt { line += " · signed \(ISO8601.string(issued))" }
            if let expires = verified.expiresAt { line += " · expires \(ISO8601.string(expires))" }
            line += " · \(verified.payload.count) bytes"
            if arguments.has("print") { console.out(String(decoding: verified.payload, as: UTF8.self)) }
            console.err(line)
            return 0
        case .failure(let failure):
            console.err("flagctl verify: \(Formatting.printable(failure.description))")
            return 1
        }
    }

    /// How `flagctl serve` signs its answers: the private key's PEM text, the key id, and how
    /// long a signed answer stays current (nil: no expiry).
    typealias Signing = (pem: String, keyID: String, expiresIn: TimeInterval?)

    /// `--expires-in SECONDS`: how long after signing a document is current; nil when not given.
    static func expiresIn(_ arguments: ParsedArguments) throws(UsageError) -> TimeInterval? {
        guard let text = arguments.value("expires-in") else { return nil }
        guard let seconds = TimeInterval(text), seconds > 0, seconds <= 0x1p32 else {
            throw UsageError(message: "--expires-in takes a positive number of seconds (at most 2^32, about 136 years), not '\(text)'")
        }
        return seconds
    }

    /// `--sign-with KEY.pem [--kid ID] [--expires-in SECONDS]`: the private key's PEM text, the
    /// key id (default: the file's name without `.pem`) and how long the answers stay current;
    /// nil without `--sign-with`.
    static func signing(_ arguments: ParsedArguments) throws -> Signing? {
        let expiresIn = try expiresIn(arguments)
        guard let path = arguments.value("sign-with") else {
            if expiresIn != nil { throw UsageError(message: "--expires-in needs --sign-with: only signed answers carry an expiry") }
            return nil
        }
        guard let data = FileManager.default.contents(atPath: (path as NSString).expandingTildeInPath) else {
            throw UsageError(message: "--sign-with: cannot read \(path)")
        }
        let pem = String(decoding: data, as: UTF8.self)
        guard SigningKeys.privateKey(pem) != nil else {
            throw UsageError(message: "--sign-with: \(path) holds no Ed25519 private key (a PRIVATE KEY PEM block)")
        }
        return (pem, arguments.value("kid") ?? keyID(fromFile: path), expiresIn)
    }

    /// Signs every answer of `server` as `signing` says: with an expiry, as one document signed
    /// now and current for that long (the answers keep that signing time and expiry, as a
    /// document nobody signs again would); without one, each answer signed when it is sent.
    /// Returns the line that says so.
    static func sign(_ server: FlagServer, _ signing: Signing) throws -> String {
        guard let seconds = signing.expiresIn else {
            try server.signAnswers(privateKeyPEM: signing.pem, keyID: signing.keyID)
            return "signing every answer as a JWS (Ed25519) with key id \(signing.keyID)"
        }
        let now = Date()
        let expiry = now + seconds
        try server.signAnswers(privateKeyPEM: signing.pem, keyID: signing.keyID, issuedAt: now, expiresAt: expiry)
        return "signing every answer as a JWS (Ed25519) with key id \(signing.keyID), signed now and current until "
            + "\(ISO8601.string(expiry)) (apps read the values STALE from then)"
    }

    /// `--trust PUB.pem` (repeatable; the key id is the file's name without `.pub.pem` or
    /// `.pem`) or `--trust ID=PUB.pem`: the trusted keys by id.
    static func trustedKeys(_ arguments: ParsedArguments) throws -> [String: String] {
        var keys: [String: String] = [:]
        for value in arguments.all("trust") {
            var id: String?
            var path = value
            if let equals = value.firstIndex(of: "="), !FileManager.default.fileExists(atPath: value) {
                id = String(value[..<equals])
                path = String(value[value.index(after: equals)...])
            }
            guard let data = FileManager.default.contents(atPath: (path as NSString).expandingTildeInPath) else {
                throw UsageError(message: "--trust: cannot read \(path)")
            }
            let text = String(decoding: data, as: UTF8.self)
            guard SigningKeys.publicKey(text) != nil else {
                throw UsageError(message: "--trust: \(path) holds no Ed25519 public key (a PUBLIC KEY PEM block)")
            }
            keys[id ?? keyID(fromFile: path)] = text
        }
        return keys
    }

    /// `ops-2026` for `keys/ops-2026.pub.pem` or `ops-2026.pem`.
    static func keyID(fromFile path: String) -> String {
        var name = (path as NSString).lastPathComponent
        for suffix in [".pem", ".pub"] where name.hasSuffix(suffix) { name = String(name.dropLast(suffix.count)) }
        return name
    }

    static let signWithOptions: [CommandSpec.Option] = [
        .init(name: "sign-with", value: "KEY.pem", help: "sign every answer (JWS, Ed25519) with this private key"),
        .init(name: "kid", value: "ID", help: "the key id signed answers name (default: the key file's name)"),
        .init(
            name: "expires-in", value: "SECONDS",
            help: "with --sign-with: answers are one document signed at the start and current this long (rehearses an expiry)"),
    ]

    static let trustOption = CommandSpec.Option(
        name: "trust", value: "PUB.pem", help: "accept only answers signed with this key (kid: the file's name, or ID=PUB.pem)",
        repeatable: true)

    private static func read(_ path: String, console: Console, command: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: (path as NSString).expandingTildeInPath) else {
            console.err("flagctl \(command): cannot read \(path)")
            return nil
        }
        return [UInt8](data)
    }
}
