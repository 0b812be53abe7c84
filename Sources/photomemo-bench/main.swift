import CompressStage
import Foundation
import PhotomemoCore
import StageKit

/// photomemo-bench: photomemo's compress stage against the tools people use today, on the
/// same 12 MP JPEGs in one run, so ratios hold on a shared, noisy machine.
///
///   photomemo-bench [--count N] [--photos DIR] [--rounds R] [--json]   side by side
///   photomemo-bench --soak N                                 RSS over N photos, 2 workers
///   photomemo-bench --upload N                               MB/s into the local store and SeaweedFS
///   photomemo-bench --e2e N [--soak M] [--before PHOTOMEMO]   a real daemon beside djpeg and Pillow (E2E.swift)
///   photomemo-bench --48mp [N] [--before PHOTOMEMO]          48 MP JPEGs through a real daemon beside djpeg -scale 1/8
///   photomemo-bench --worker W --out DIR FILE...             (internal: one measured child)
let usage = """
usage: photomemo-bench [--count N] [--photos DIR] [--corpus DIR] [--rounds R] [--json]
       photomemo-bench --soak N [--count N]
       photomemo-bench --upload N [--json]      # MB/s into the stores for N photos' renditions
       photomemo-bench --index N [--json]       # record index: insert rate, query p50/p99 over N records
       photomemo-bench --e2e N [--soak M] [--rounds R] [--chart FILE.svg] [--before PHOTOMEMO] [--json]
                                                # N photos through a real daemon beside djpeg and Pillow
       photomemo-bench --latency [--rounds R] [--before PHOTOMEMO] [--json]
                                                # drop → create for 20 small photos a round, with where the time goes (LatencyBench)
       photomemo-bench --48mp [N] [--rounds R] [--before PHOTOMEMO] [--json]
                                                # N (8) 48 MP JPEGs through a real daemon beside djpeg -scale 1/8 (Bench48MP)
       photomemo-bench --cluster [--count N] [--rounds R] [--json]  # PostgreSQL + S3: claims, NOTIFY, daemon (ClusterBench)
       photomemo-bench --cluster --claims-only [--json]             # the queue alone: claims/s on PostgreSQL and SQLite
       photomemo-bench --cluster --servers-elsewhere [--count N] [--rounds R]  # daemons on CPU 0, servers on CPU 1
       photomemo-bench --fairness [--seconds S] [--json]   # issue 25's attacks on a real daemon, as root (FairnessBench)
       photomemo-bench --retention N [--chart FILE.svg] [--json]  # journal size over N jobs without and with retention (RetentionBench)
       photomemo-bench --heic DIR [--copies N] [--rounds R] [--json]  # HEIC CPU/photo: compress, vipsthumbnail, libde265 floor (HEICBench)
       photomemo-bench --exec-workers N [--json]  # a Python exec stage: process per job vs 2 workers, N jobs each (ExecWorkersBench)
"""

/// Flags taken out of the argument list one by one; what is left are file names.
struct Arguments {
    var rest = Array(CommandLine.arguments.dropFirst())

    mutating func value(_ flag: String) -> String? {
        guard let i = rest.firstIndex(of: flag), i + 1 < rest.count else { return nil }
        defer { rest.removeSubrange(i...(i + 1)) }
        return rest[i + 1]
    }

    mutating func flag(_ f: String) -> Bool {
        guard let i = rest.firstIndex(of: f) else { return false }
        rest.remove(at: i)
        return true
    }
}

/// Runs the compress stage over `files` with `workers` threads; returns failures.
func compressAll(_ files: [String], workers: Int, out: String, repeatUntil total: Int? = nil, heifDirect: Bool = true,
                 sample: (@Sendable (Int) -> Void)? = nil) throws -> Int {
    // The stage's defaults are the seed apps' renditions.
    var configured = try CompressStage(options: StageOptions(validating: [:], against: CompressStage.options, place: "bench"),
                                  environment: StageEnvironment(home: URL(fileURLWithPath: out)))
    configured.decodesHEIFDirectly = heifDirect
    let stage = configured
    let n = total ?? files.count
    // The stage checks each photo against the hash intake took, as in the daemon.
    let hashes = try files.map { try SHA256.hexOfFile(atPath: $0).hex }
    let next = LockedValue(0), failures = LockedValue(0)
    // One photo per worker thread at a time, libvips concurrency 1 (as in the daemon).
    DispatchQueue.concurrentPerform(iterations: workers) { _ in
        while true {
            let i = next.withLock { v -> Int in defer { v += 1 }; return v }
            if i >= n { return }
            // A key per slot, not per photo: a soak rewrites the same files instead of filling the disk.
            let job = JobContext(id: Int64(i), key: "bench-\(i % files.count)", photoPath: files[i % files.count],
                                 photoSHA256: hashes[i % files.count], photoRoot: (files[i % files.count] as NSString).deletingLastPathComponent, memo: .photoOnly("p"), results: [:], attempt: 1)
            if case .continue = stage.run(job) {} else { failures.withLock { $0 += 1 } }
            if i % 100 == 99 { sample?(i + 1) }
        }
    }
    return failures.value
}

limitMallocArenas(2)

var args = Arguments()
if let decoder = args.value("--heic-floor") {
    for f in args.rest {
        let data = try Data(contentsOf: URL(fileURLWithPath: f))
        _ = decoder == "libde265" ? try De265Floor.decodeTiles(data) : try HEIFFloor.decodeTiles(data)
    }
    exit(0)
}
let heicLibvips = args.flag("--heic-libvips")
if let w = args.value("--worker"), let out = args.value("--out") {
    exit(try compressAll(args.rest, workers: Int(w) ?? 1, out: out, heifDirect: !heicLibvips) == 0 ? 0 : 1)
}

let json = args.flag("--json")
let count = Int(args.value("--count") ?? "24") ?? 24
let soak = args.value("--soak").flatMap(Int.init)
let rounds = max(1, Int(args.value("--rounds") ?? "3") ?? 3)
let uploadPhotos = args.value("--upload").flatMap(Int.init)
let e2e = args.value("--e2e").flatMap(Int.init)
let chartPath = args.value("--chart")
let chart = chartPath ?? NSTemporaryDirectory() + "photomemo-e2e-cpu-by-stage.svg"
let before = args.value("--before")
let cluster = args.flag("--cluster")
let elsewhere = args.flag("--servers-elsewhere")
if cluster && args.flag("--claims-only") {
    try ClusterBench.claimsOnly(json: json)
    exit(0)
}
if args.flag("--fairness") {
    try FairnessBench.run(seconds: Int(args.value("--seconds") ?? "30") ?? 30, json: json)
    exit(0)
}
if let n = args.value("--retention").flatMap(Int.init) {
    try RetentionBench.run(jobs: max(1, n), chart: chartPath ?? NSTemporaryDirectory() + "photomemo-retention-journal.svg", json: json)
    exit(0)
}
if let n = args.value("--exec-workers").flatMap(Int.init) {
    try ExecWorkersBench.run(jobs: n, json: json)
    exit(0)
}
if args.flag("--latency") {
    try LatencyBench.run(rounds: rounds, before: before, json: json)
    exit(0)
}
if let dir = args.value("--heic") {
    try HEICBench.run(dir: dir, copies: Int(args.value("--copies") ?? "4") ?? 4, rounds: rounds, json: json)
    exit(0)
}
if let n = args.value("--index").flatMap(Int.init) {
    try IndexBench.run(records: n, json: json)
    exit(0)
}
// `--48mp` alone or with a count.
let mp48: Int? = args.rest.firstIndex(of: "--48mp").map { i in
    args.rest.remove(at: i)
    guard i < args.rest.count, let n = Int(args.rest[i]) else { return 8 }
    args.rest.remove(at: i)
    return max(1, n)
}
let corpusCount = e2e ?? mp48 ?? count
let corpusDir = args.value("--corpus") ?? NSTemporaryDirectory() + "photomemo-bench-corpus-\(mp48 == nil ? "" : "48mp-")\(corpusCount)"
let files: [String]
if let dir = args.value("--photos") {
    files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.lowercased().hasSuffix(".jpg") || $0.lowercased().hasSuffix(".jpeg") }
        .sorted().map { dir + "/" + $0 }
} else {
    files = mp48 == nil ? try Corpus.make(in: corpusDir, count: corpusCount)
        : try Corpus.make(in: corpusDir, count: corpusCount, width: Bench48MP.width, height: Bench48MP.height)
}
guard args.rest.isEmpty, !files.isEmpty else {
    StandardStream.err((usage + "\n"))
    exit(2)
}

if let uploadPhotos {
    // Rendition sizes as compress makes them from this corpus.
    let out = NSTemporaryDirectory() + "photomemo-bench-sizes-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: out) }
    let stage = try CompressStage(options: StageOptions(validating: [:], against: CompressStage.options, place: "bench"),
                                  environment: StageEnvironment(home: URL(fileURLWithPath: out)))
    guard case .continue(let r) = stage.run(JobContext(id: 0, key: "sizes", photoPath: files[0], photoSHA256: try SHA256.hexOfFile(atPath: files[0]).hex,
                                              photoRoot: (files[0] as NSString).deletingLastPathComponent, memo: .photoOnly("p"), results: [:], attempt: 1)) else {
        StandardStream.err("cannot compress \(files[0])\n")
        exit(1)
    }
    let size = { (name: String) in Int(r["renditions"]?[name]?["bytes"]?.intValue ?? 100_000) }
    try StoreBench.run(photos: uploadPhotos, displayBytes: size("display"), thumbnailBytes: size("thumbnail"), json: json)
    exit(0)
}

if mp48 != nil {
    try Bench48MP.run(files: files, rounds: rounds, before: before, json: json)
    exit(0)
}
if e2e != nil {
    try E2E.run(files: files, rounds: Int(rounds), soak: soak, chart: chart, before: before, json: json)
    exit(0)
}
if cluster {
    try ClusterBench.run(files: files, rounds: rounds, json: json, elsewhere: elsewhere)
    exit(0)
}
if let soak {
    try Soak.run(files: files, photos: soak, json: json)
    exit(0)
}
try SideBySide.run(files: files, rounds: rounds, json: json)
