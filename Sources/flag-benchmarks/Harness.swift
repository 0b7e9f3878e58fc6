import Foundation

/// Timing with medians over repeated runs, after warm-up runs that are thrown away.
enum Harness {
    /// One measured figure: nanoseconds per operation across runs.
    struct Stats {
        let median: Double
        let p10: Double
        let p90: Double
        let runs: Int

        /// (p90 − p10) / median: how much the runs disagree.
        var spread: Double { median > 0 ? (p90 - p10) / median : 0 }
    }

    /// Runs `body(operations)` `warmup + runs` times and reports ns per operation.
    static func measure(operations: Int, runs: Int = 15, warmup: Int = 3, _ body: (Int) -> Void) -> Stats {
        var samples: [Double] = []
        for run in 0..<(warmup + runs) {
            let start = DispatchTime.now().uptimeNanoseconds
            body(operations)
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
            if run >= warmup { samples.append(elapsed / Double(operations)) }
        }
        samples.sort()
        func percentile(_ p: Double) -> Double { samples[min(samples.count - 1, Int(Double(samples.count - 1) * p + 0.5))] }
        return Stats(median: percentile(0.5), p10: percentile(0.1), p90: percentile(0.9), runs: runs)
    }

    /// The nanoseconds of each of `runs` calls of `body` (after `warmup` untimed ones).
    static func samples(runs: Int, warmup: Int, _ body: () -> Void) -> [Double] {
        var samples: [Double] = []
        for run in 0..<(warmup + runs) {
            let start = DispatchTime.now().uptimeNanoseconds
            body()
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
            if run >= warmup { samples.append(elapsed) }
        }
        return samples
    }

    /// Measures `floor` and `candidate` in alternating runs, so both see the same machine
    /// state, and reports the median of the per-pair ratios (candidate / floor).
    static func compare(
        operations: Int, runs: Int = 15, warmup: Int = 3, floor: (Int) -> Void, candidate: (Int) -> Void
    ) -> (floor: Stats, candidate: Stats, ratio: Double) {
        func time(_ body: (Int) -> Void) -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            body(operations)
            return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(operations)
        }
        return alternate(runs: runs, warmup: warmup, floor: { time(floor) }, candidate: { time(candidate) })
    }

    /// ``measureConcurrent(threads:operations:runs:warmup:_:)`` of `floor` and `candidate` in
    /// alternating runs; the ratio is the median of the per-pair ratios.
    static func compareConcurrent(
        threads: Int, operations: Int, runs: Int = 9, warmup: Int = 2, floor: @escaping @Sendable (Int) -> Void,
        candidate: @escaping @Sendable (Int) -> Void
    ) -> (floor: Stats, candidate: Stats, ratio: Double) {
        alternate(
            runs: runs, warmup: warmup,
            floor: { measureConcurrent(threads: threads, operations: operations, runs: 1, warmup: 0, floor).median },
            candidate: { measureConcurrent(threads: threads, operations: operations, runs: 1, warmup: 0, candidate).median })
    }

    /// Times `floor` then `candidate`, `warmup + runs` times; the first `warmup` pairs are thrown
    /// away. The ratio is the median of the per-pair ratios.
    private static func alternate(
        runs: Int, warmup: Int, floor: () -> Double, candidate: () -> Double
    ) -> (floor: Stats, candidate: Stats, ratio: Double) {
        var floorSamples: [Double] = [], candidateSamples: [Double] = [], ratios: [Double] = []
        for run in 0..<(warmup + runs) {
            let f = floor()
            let c = candidate()
            if run >= warmup {
                floorSamples.append(f)
                candidateSamples.append(c)
                ratios.append(c / f)
            }
        }
        return (stats(floorSamples, runs), stats(candidateSamples, runs), median(ratios))
    }

    /// The median of `candidates[i] / floors[i]`: samples taken in pairs, one of each.
    static func medianRatio(_ candidates: [Double], over floors: [Double]) -> Double {
        median(zip(candidates, floors).map { $0 / $1 })
    }

    /// The median of `values`, as ``stats(_:_:)`` picks it; 0 for none.
    static func median(_ values: [Double]) -> Double {
        values.isEmpty ? 0 : stats(values, values.count).median
    }

    static func stats(_ values: [Double], _ runs: Int) -> Stats {
        let sorted = values.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))] }
        return Stats(median: percentile(0.5), p10: percentile(0.1), p90: percentile(0.9), runs: runs)
    }

    /// Runs `body` on `threads` threads at once, each doing `operations`; reports the wall
    /// time per operation per thread (the latency each reader sees under contention).
    static func measureConcurrent(threads: Int, operations: Int, runs: Int = 9, warmup: Int = 2, _ body: @escaping @Sendable (Int) -> Void) -> Stats {
        measure(operations: operations, runs: runs, warmup: warmup) { n in
            let group = DispatchGroup()
            let start = DispatchSemaphore(value: 0)
            for _ in 0..<threads {
                group.enter()
                Thread {
                    start.wait()
                    body(n)
                    group.leave()
                }.start()
            }
            for _ in 0..<threads { start.signal() }
            group.wait()
        }
    }
}

/// Keeps a value alive so the optimiser cannot drop the work that produced it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}
