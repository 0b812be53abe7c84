import Foundation
import Glibc
import Index
import Journal
import PhotomemoCore
import StageKit

/// `photomemo verify [--repair]`, off the loop: every record's assets are read back from
/// the store and hashed (at most `rate` bytes a second), then the store's objects that no
/// record, no released key and no unfinished job names are listed as orphans. With
/// `repair`, a damaged or missing rendition is made again from a good original by the
/// definition's compress stage (`RenditionMaker`) when that gives the bytes the record
/// holds, and orphans are deleted.
struct StoreVerifier {
    let records: any RecordIndex
    let journal: Journal?
    let store: any AssetStore
    let maker: (any RenditionMaker)?
    /// Where an original is fetched to while its renditions are made again.
    let scratch: String
    let repair: Bool
    let bytesPerSecond: Int64
    let cancelled: @Sendable () -> Bool

    func run() throws -> VerifyReport {
        var report = VerifyReport()
        report.repair = repair
        var rate = ReadRate(bytesPerSecond: bytesPerSecond)
        var after = ""
        while true {
            let page = try records.assetPage(after: after, limit: 200)
            guard let last = page.last else { break }
            after = last.id
            for (id, assets) in page {
                if cancelled() { throw PhotomemoError(.notRunning, "verify stopped: the daemon is stopping") }
                report.records += 1
                var problems: [VerifyReport.Problem] = []
                var goodOriginal = false
                for (name, asset) in (assets.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                    guard let key = asset["key"]?.stringValue, let sha = asset["sha256"]?.stringValue else { continue }
                    report.checked += 1
                    if let why = try check(key, sha256: sha, rate: &rate, read: &report.bytesRead) {
                        problems.append(.init(record: id, asset: name, key: key, reason: why))
                    } else {
                        report.ok += 1
                        if name == "original" { goodOriginal = true }
                    }
                }
                if repair && !problems.isEmpty { remake(&problems, record: id, assets: assets, goodOriginal: goodOriginal) }
                for p in problems { if p.reason.hasPrefix("not in the store") { report.missing.append(p) } else { report.damaged.append(p) } }
            }
        }
        report.orphans = try orphans()
        if repair {
            // Asked again just before each delete: a job may have taken the same bytes since.
            let unfinished = try journal?.contentHashesOfUnfinishedJobs() ?? []
            for i in report.orphans.indices {
                if try isNeeded(report.orphans[i].key, unfinished: unfinished) { continue }
                try store.delete(key: report.orphans[i].key)
                report.orphans[i].released = true
            }
        }
        report.finishedAt = unixNow()
        return report
    }

    /// Why the object at `key` is not the asset the record holds, or nil when it is.
    func check(_ key: String, sha256: String, rate: inout ReadRate, read: inout Int64) throws -> String? {
        guard let size = try store.head(key: key) else { return "not in the store" }
        var hash = SHA256()
        var offset: Int64 = 0
        while offset < size {
            let chunk = try store.read(key: key, offset: offset, count: 1 << 20)
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { hash.update($0) }
            offset += Int64(chunk.count)
            read += Int64(chunk.count)
            rate.took(chunk.count)
        }
        let actual = hash.finalizeHex()
        return actual == sha256 ? nil : "its bytes have sha256 \(actual) (\(size) bytes); the record holds \(sha256)"
    }

    /// Objects in the store that nothing needs: listed first, and only then the journal and
    /// the index asked, so an object stored meanwhile is either not listed or already named.
    func orphans() throws -> [VerifyReport.Orphan] {
        let listed = try store.list(prefix: "sha256/")
        let unfinished = try journal?.contentHashesOfUnfinishedJobs() ?? []
        var out: [VerifyReport.Orphan] = []
        for key in listed {
            if try isNeeded(key, unfinished: unfinished) { continue }
            out.append(.init(key: key, bytes: (try? store.head(key: key)) ?? 0))
        }
        return out
    }

    /// A record names it, the collector is about to delete it, or a job not done may still
    /// need it (its photo, a rendition made or stored: `retry` resumes from them).
    func isNeeded(_ key: String, unfinished: Set<String>) throws -> Bool {
        if let hex = key.split(separator: "/").last, unfinished.contains(String(hex)) { return true }
        return try records.isReferenced(key) || records.isReleased(key)
    }

    /// Makes the record's damaged or missing renditions again from its original, stores
    /// those whose bytes are the ones the record holds, and says why for the others.
    func remake(_ problems: inout [VerifyReport.Problem], record: String, assets: JSONValue, goodOriginal: Bool) {
        func refuse(_ why: String) {
            for i in problems.indices {
                problems[i].repairError = problems[i].asset == "original" ? "an original cannot be made again (restore it from a backup)" : why
            }
        }
        guard let original = assets["original"], let key = original["key"]?.stringValue, let sha = original["sha256"]?.stringValue,
              goodOriginal else {
            return refuse("the original is missing or damaged: nothing to make it from (restore it from a backup)")
        }
        guard let maker else { return refuse("the job definition has no compress stage to make renditions with") }
        let made: [String: Data]
        let temp = scratch + "/verify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            defer { unlink(temp) }
            try store.get(key: key, to: temp)
            let photo = try PhotoFile(temp, beneath: scratch, owner: nil, seal: nil, maxBytes: Int64.max)
            made = try maker.renditions(of: PhotoBytes.read(photo, sha256: sha, seal: nil))
        } catch {
            return refuse("cannot make renditions from the original: \(error)")
        }
        for i in problems.indices {
            let p = problems[i]
            guard p.asset != "original" else { problems[i].repairError = "an original cannot be made again (restore it from a backup)"; continue }
            guard let data = made[p.asset] else {
                problems[i].repairError = "the job definition makes no rendition named \(p.asset) any more"
                continue
            }
            let sha = assets[p.asset]?["sha256"]?.stringValue ?? ""
            guard SHA256.hex(data) == sha else {
                problems[i].repairError = "the job definition now makes other bytes for \(p.asset) (sha256 \(SHA256.hex(data))): reprocess the record"
                continue
            }
            do {
                let file = temp + "." + p.asset
                defer { unlink(file) }
                try DurableFile.write(data, to: file)
                // A damaged object of the right size would be kept by put: it goes first.
                if try store.head(key: p.key) != nil { try store.delete(key: p.key) }
                try store.put(file: file, key: p.key, sha256: sha, contentType: "image/" + (assets[p.asset]?["format"]?.stringValue ?? "jpeg"),
                              metadata: [:])
                problems[i].repaired = true
            } catch {
                problems[i].repairError = "cannot store it: \(error)"
            }
        }
    }
}
