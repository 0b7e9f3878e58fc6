import Testing
import FlagServer

/// The judgement of a run of oversized answers: a leak keeps rising; the allocator's steps go flat.
@Suite("Oversized probe: leak or allocator step")
struct OversizedProbeTests {
    /// A real run (99 answers, a full parallel test run around it) whose second half lay 2.3 MB
    /// above the first — then stayed flat for its last 40 answers.
    static let allocatorStep = [
        28672, -1155072, -593920, -811008, -811008, -774144, -778240, 1306624, 1310720, 1433600, 1429504, 1351680, 1769472,
        1769472, 1732608, 1736704, 1835008, 618496, 602112, 598016, 491520, 487424, 356352, 401408, 401408, 417792, 421888,
        417792, 278528, 217088, 196608, 147456, 151552, 151552, 155648, 151552, 143360, 135168, 102400, 106496, 118784,
        110592, 610304, 692224, 1708032, 1753088, 1769472, 1769472, 1761280, 2375680, 2355200, 2359296, 1744896, 802816,
        782336, 1564672, 1613824, 1822720, 1867776, 2551808, 2547712, 2834432, 3194880, 3186688, 3178496, 3170304, 3190784,
        3215360, 3145728, 3170304, 3543040, 3182592, 3153920, 3198976, 3129344, 3104768, 3166208, 3149824, 3137536,
        3641344, 3104768, 3342336, 3133440, 3100672, 3096576, 3076096, 3080192, 3067904, 3055616, 3055616, 3047424,
        3231744, 3223552, 3223552, 3231744, 3235840, 3231744, 3207168, 3186688,
    ]

    @Test func anAllocatorStepThatGoesFlatIsNoLeak() {
        let (peak, rise, tailSlope) = OversizedProbe.summary(Self.allocatorStep)
        #expect(peak == 3_641_344 && rise > 2 << 20, "the halves alone would call it a leak")
        #expect(abs(tailSlope) < 10_000, "flat at the end: \(tailSlope)")
        #expect(!OversizedProbe.leaks(rise: rise, tailSlope: tailSlope))
    }

    @Test func aLeakOf45KBPerAnswerIsOneEvenOverTheAllocatorsNoise() {
        // The same noise, plus 45 KB kept by every answer.
        let leaking = Self.allocatorStep.enumerated().map { $0.element + 45_000 * $0.offset }
        let (_, rise, tailSlope) = OversizedProbe.summary(leaking)
        #expect(tailSlope > 30_000, "\(tailSlope)")
        #expect(OversizedProbe.leaks(rise: rise, tailSlope: tailSlope))
        // Without the allocator's noise too.
        let steady = (0..<99).map { 45_000 * $0 }
        let summary = OversizedProbe.summary(steady)
        #expect(summary.tailSlope == 45_000 && OversizedProbe.leaks(rise: summary.rise, tailSlope: summary.tailSlope))
    }

    @Test func aRunThroughTwiceTheAnswersTellsALeakFromALateStep() {
        // A late step looks like a leak over 99 answers; through 198 the same steps lie no farther apart.
        let late = OversizedProbe.summary(Array(repeating: 0, count: 60) + Array(repeating: 3_000_000, count: 39) as [Int])
        let lateDoubled = OversizedProbe.summary(Array(repeating: 0, count: 60) + Array(repeating: 3_000_000, count: 138) as [Int])
        #expect(!OversizedProbe.scales(first: (late.rise, 30_000), doubled: (lateDoubled.rise, lateDoubled.tailSlope)))
        // 45 KB kept per answer: twice the answers, twice the distance between the halves, still rising.
        let leak = OversizedProbe.summary((0..<99).map { 45_000 * $0 })
        let leakDoubled = OversizedProbe.summary((0..<198).map { 45_000 * $0 })
        #expect(OversizedProbe.scales(first: (leak.rise, leak.tailSlope), doubled: (leakDoubled.rise, leakDoubled.tailSlope)))
    }

    @Test func aFlatRunIsNoLeak() {
        let summary = OversizedProbe.summary(Array(repeating: 500_000, count: 99))
        #expect(summary.rise == 0 && summary.tailSlope == 0 && !OversizedProbe.leaks(rise: 0, tailSlope: 0))
        #expect(OversizedProbe.summary([]).peak == 0, "no lines: nothing to judge")
    }

    @Test func theMeasurementSetsEachServerUpOnceThenTakesThemInTurn() async {
        var calls: [Int] = []
        var lines: [String] = []
        let measured = await OversizedProbe.measure(servers: 2, count: 4, returningFreeMemory: false, say: { lines.append($0) }) { index in
            calls.append(index)
            return calls.count > 2 ? "answer \(calls.count - 2)" : "set-up, not said"
        }
        #expect(measured, "resident memory is readable on Linux")
        #expect(calls == [0, 1, 0, 1, 0, 1])
        #expect(OversizedProbe.growth(in: lines.joined(separator: "\n")).count == 4)
        #expect(lines.filter { !$0.hasPrefix("growth ") } == ["answer 1", "answer 2", "answer 3", "answer 4"])
    }
}
