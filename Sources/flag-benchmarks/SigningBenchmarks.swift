import FeatureFlags
import FeatureFlagsSigning
import Foundation

/// Verifying a signed document: Ed25519 over a 20 KB and a 1 MiB document (the SHA-512 of the
/// bytes grows with the size, the curve arithmetic does not), beside decoding the same bytes.
enum SigningBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        report.section("Signed documents — Ed25519 (RFC 8032) verification")
        let runs = quick ? 5 : 15
        let seed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let key = Ed25519.publicKey(seed: seed)
        for (name, size) in [("20 KB", 20 * 1024), ("1 MiB", 1 << 20)] {
            let document = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let signature = Ed25519.sign(document, seed: seed)
            guard Ed25519.verify(signature: signature, of: document, publicKey: key) else {
                throw BenchmarkError("a \(name) signature did not verify")
            }
            // Hash and verify alternate, and the ratio is the median of the pairs' ratios: this
            // machine has slow phases of seconds, and two blocks of runs measured one after the
            // other read 0.96–1.62× for the same code.
            let (hash, verify, ratio) = Harness.compare(
                operations: 1, runs: runs, floor: { _ in blackHole(SHA512.hash(document)) },
                candidate: { _ in blackHole(Ed25519.verify(signature: signature, of: document, publicKey: key)) })
            report.add(.init(section: "signing", name: "SHA-512 of a \(name) document", value: hash.median / 1_000, unit: "µs", spread: hash.spread))
            // Past a few hundred KB the hash is the cost: a 1 MiB verify may add at most half
            // of it (the curve arithmetic, under a millisecond, is the same for any size).
            let budgeted = size == 1 << 20
            report.add(
                .init(
                    section: "signing", name: "verify a \(name) document", value: verify.median / 1_000, unit: "µs", spread: verify.spread,
                    floor: "SHA-512", ratio: ratio, budget: budgeted ? "≤ 1.5× SHA-512" : nil,
                    passed: budgeted ? ratio <= 1.5 : nil))
        }
        try launch(report, quick: quick, seed: seed)
    }

    /// A launch on a 1,000-flag fallback file, signed (the stored snapshot verified again: the
    /// signature, and the signed document decoded and compared) against the same launch
    /// unsigned. The budget: the signed launch costs at most the unsigned one plus 1.25× what
    /// verifying and decoding the document once costs, measured in the same run — the launch
    /// adds nothing beyond that one check.
    static func launch(_ report: Report, quick: Bool, seed: [UInt8]) throws {
        let runs = quick ? 21 : 101
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = URL(string: "https://flags.example.com/flags")!
        let document = FlagDocument(version: "bench", ttl: 300, flags: sampleFlags(1_000)).jsonBytes()
        let envelope = JWS.sign(document, seed: seed, keyID: "bench", issuedAt: Date(timeIntervalSince1970: 1_790_000_000))
        let keys = ["bench": SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: seed))]
        let context = InitBenchmarks.context
        guard let flags = (try? FlagEndpoint.json(post: url).decode(FlagResponse(status: 200, body: document), for: context))?.flags else {
            throw BenchmarkError("the JSON endpoint did not decode the document")
        }
        var snapshot = FlagSnapshot(flags: flags, version: "bench", fetchedAt: Date(timeIntervalSince1970: 1_790_000_000))
        let unsignedFile = directory.appendingPathComponent("unsigned.lkg")
        try LastKnownGoodStore(fileURL: unsignedFile).save(snapshot, etag: nil, for: context)
        snapshot.signature = SignatureStamp(
            keyID: "bench", issuedAt: Date(timeIntervalSince1970: 1_790_000_000), expiresAt: nil, envelope: envelope)
        let signedFile = directory.appendingPathComponent("signed.lkg")
        try LastKnownGoodStore(fileURL: signedFile).save(snapshot, etag: nil, for: context)

        func start(_ file: URL, trusted: Bool) -> (Bool, FeatureFlagProvider) {
            let fetcher = FlagFetcher(endpoint: .json(post: url), configuration: .init(trustedKeys: trusted ? keys : [:]))
            let provider = FeatureFlagProvider(context: context, fetcher: fetcher, store: LastKnownGoodStore(fileURL: file))
            return (provider.value(FlagKey("feature_flag_0", default: false)), provider)
        }
        /// One launch's nanoseconds.
        func launchTime(_ file: URL, trusted: Bool) throws -> Double {
            let begin = DispatchTime.now().uptimeNanoseconds
            let (on, provider) = start(file, trusted: trusted)
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - begin)
            provider.shutdown()
            guard provider.snapshot.version == "bench", !provider.recentEvents.contains(where: { $0.kind == .fallbackTampered }) else {
                throw BenchmarkError("the \(trusted ? "signed" : "unsigned") fallback file was not served")
            }
            blackHole(on)
            return elapsed
        }
        let trusted = try TrustedKeys(keys)
        // The check, the unsigned launch and the signed one alternate, and the budget is judged
        // on each triple (what signing added, over what one check cost), then the median of
        // those: a slow phase of a shared machine spoils only the triples inside it.
        var checks: [Double] = [], unsignedTimes: [Double] = [], signedTimes: [Double] = [], shares: [Double] = []
        for run in 0..<(runs + 10) {
            let begin = DispatchTime.now().uptimeNanoseconds
            let payload = (try? JWS.verify(envelope, trusting: trusted).get())?.payload ?? []
            blackHole(try? FlagEndpoint.json(post: url).decode(FlagResponse(status: 200, body: payload), for: context))
            let checkTime = Double(DispatchTime.now().uptimeNanoseconds - begin)
            let unsignedTime = try launchTime(unsignedFile, trusted: false)
            let signedTime = try launchTime(signedFile, trusted: true)
            guard run >= 10 else { continue }
            checks.append(checkTime)
            unsignedTimes.append(unsignedTime)
            signedTimes.append(signedTime)
            shares.append((signedTime - unsignedTime) / checkTime)
        }
        let check = Harness.stats(checks, runs)
        let unsigned = Harness.stats(unsignedTimes, runs)
        let signed = Harness.stats(signedTimes, runs)
        let share = Harness.median(shares)
        report.add(.init(section: "signing", name: "floor: verify + decode the 1,000-flag document once", value: check.median / 1_000, unit: "µs", spread: check.spread))
        report.add(.init(section: "signing", name: "launch on the 1,000-flag fallback file, unsigned", value: unsigned.median / 1_000, unit: "µs", spread: unsigned.spread))
        report.add(
            .init(
                section: "signing", name: "launch on it signed, verified again", value: signed.median / 1_000, unit: "µs",
                spread: signed.spread, floor: "floor, added", ratio: share,
                budget: "adds ≤ 1.25× the floor", passed: share <= 1.25))
    }
}
