import Foundation
import Glibc
import StageKit

/// `--48mp N`: N 48 MP JPEGs (8064x6048, made as the 12 MP corpus is: `SyntheticPhoto`,
/// Q92, the same mix of orientations) dropped into a real daemon running the default job,
/// beside `djpeg -scale 1/8` and djpeg at each photo's own scale (portraits need 2/8) on
/// the same files in the same rounds (`E2E.floorAndDaemons`:
/// the floor brackets the daemons; `--before` runs another build in the same rounds).
/// CPU is the daemon's own from /proc, djpeg's from wait4; peak RSS is the daemon's VmHWM.
enum Bench48MP {
    static let width = 8064, height = 6048

    static func run(files: [String], rounds: Int, before: String?, json: Bool) throws {
        guard which("djpeg") != nil else { throw BenchDaemon.Failure("djpeg not found: apt-get install libjpeg-turbo-progs") }
        let scratch = NSTemporaryDirectory() + "photomemo-48mp-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let binary = try E2E.photomemoBinary()
        let uptime = ClusterBench.uptimeLine()
        var warm = Measurement()
        spawn(["cat"] + files, into: &warm)
        var best: [String: E2E.Tool] = [:]
        var perRound: [[String: E2E.Tool]] = []
        let floor = (scale: "1/8", own: try E2E.ownScales(files, scratch: scratch))
        for round in 0..<rounds {
            let r = try E2E.floorAndDaemons(files, round: round, rounds: rounds, floor: floor, binary: binary, before: before, scratch: scratch)
            perRound.append(r)
            for (name, t) in r where best[name].map({ t.cpuMsPerPhoto < $0.cpuMsPerPhoto }) ?? true { best[name] = t }
        }
        // djpeg's peak RSS under GNU time (wait4's would be the bench's own: see `measure`).
        var floorRSS = Measurement()
        measure(["djpeg", "-scale", "1/8", "-outfile", "/dev/null", files[0]], into: &floorRSS)
        StandardStream.err(String(repeating: " ", count: 60) + "\r")

        let ratios = { (a: String, b: String) -> [Double] in
            perRound.compactMap { r in r[a].flatMap { x in r[b].map { x.cpuMsPerPhoto / $0.cpuMsPerPhoto } } }
        }
        let median = { (r: [Double]) -> Double in r.isEmpty ? 0 : r.sorted()[r.count / 2] }
        let names = [("photomemo daemon, default job", "photomemo"), ("photomemo before (--before)", "before"),
                     ("djpeg -scale 1/8 (decode only)", "djpeg"), ("djpeg at each photo's own scale", "djpeg-own")].filter { best[$0.1] != nil }
        if json {
            var o: [String: JSONValue] = ["photos": .int(Int64(files.count)), "width": .int(Int64(width)), "height": .int(Int64(height)),
                                          "rounds": .int(Int64(rounds)), "uptime": .string(uptime),
                                          "cpu_vs_djpeg_median": .double(median(ratios("photomemo", "djpeg"))),
                                          "cpu_vs_djpeg_own_scale_median": .double(median(ratios("photomemo", "djpeg-own")))]
            for (_, key) in names {
                let t = best[key]!
                o[key] = ["photos_per_s": .double(t.photosPerSecond), "cpu_ms_per_photo": .double(t.cpuMsPerPhoto),
                          "compress_ms_per_photo": .double(t.stages["compress"] ?? 0), "failures": .int(Int64(t.failures)),
                          "peak_rss_kb": .int(Int64(key.hasPrefix("djpeg") ? floorRSS.peakRSSKB : t.peakRSSKB))]
            }
            if before != nil { o["cpu_vs_before_median"] = .double(median(ratios("photomemo", "before"))) }
            print(JSONValue.object(o).jsonString)
            return
        }
        print("photomemo 48 MP, \(files.count) JPEGs \(width)x\(height), best of \(rounds), \(isoTimestamp(unixNow()))")
        print(uptime)
        print("tool                                   photos/s   CPU ms/photo   compress ms   peak RSS")
        for (label, key) in names {
            let t = best[key]!
            let compress = key.hasPrefix("djpeg") ? "             " : String(format: "   %11.1f", t.stages["compress"] ?? 0)
            print(label.padding(toLength: 38, withPad: " ", startingAt: 0)
                + String(format: " %8.2f   %12.1f", t.photosPerSecond, t.cpuMsPerPhoto) + compress
                + String(format: "   %5d MB", (key.hasPrefix("djpeg") ? floorRSS.peakRSSKB : t.peakRSSKB) / 1024)
                + (t.failures > 0 ? " (\(t.failures) failed)" : ""))
        }
        let fixed = ratios("photomemo", "djpeg"), own = ratios("photomemo", "djpeg-own")
        print("CPU per photo / djpeg -scale 1/8, per round: " + fixed.map { String(format: "%.2fx", $0) }.joined(separator: " ")
            + String(format: " (median %.2fx; target ≤ 1.25x)", median(fixed)))
        print("CPU per photo / djpeg at each photo's own scale (1/8, portraits 2/8), per round: "
            + own.map { String(format: "%.2fx", $0) }.joined(separator: " ") + String(format: " (median %.2fx)", median(own)))
        if before != nil {
            let b = ratios("before", "djpeg")
            print("before / djpeg -scale 1/8, per round: " + b.map { String(format: "%.2fx", $0) }.joined(separator: " ")
                + String(format: " (median %.2fx)", median(b)))
        }
        print(String(format: "photomemo peak RSS %d MB (target ≤ 250 MB)", (best["photomemo"]?.peakRSSKB ?? 0) / 1024))
    }
}
