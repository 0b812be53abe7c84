import Foundation
import Glibc
import PhotomemoCore
import StageKit

extension Quarantine {
    /// Removes what was quarantined before `cutoff` (retention's `failed`), each file with
    /// its `NAME.reason.json`, at most `limit` files a call. A file's age is its reason's
    /// (written as it moved in), else its own ctime (the rename into quarantine sets it;
    /// its mtime is the photo's own). Returns how many files went, and what could not go.
    func prune(before cutoff: Double, limit: Int = 500) -> (removed: Int, errors: [String]) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return (0, []) }
        let present = Set(names)
        var removed = 0
        var errors: [String] = []
        func changed(_ path: String, modified: Bool) -> Double? {
            // Any entry but a folder: a quarantined link or FIFO goes too (unlink never follows).
            guard let st = try? Files.lstatEntry(path), st.st_mode & S_IFMT != S_IFDIR else { return nil }
            let t = modified ? st.st_mtim : st.st_ctim
            return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
        }
        func remove(_ name: String) {
            if unlink(folder + "/" + name) == 0 || errno == ENOENT { removed += 1 } else {
                errors.append("\(folder)/\(name): \(SystemError.reason(errno))")
            }
        }
        for name in names.sorted() where removed < limit {
            if name.hasSuffix(".reason.json") {
                // A reason whose file is gone (a job whose photo had vanished): by its own age.
                let base = String(name.dropLast(".reason.json".count))
                if !present.contains(base), let t = changed(folder + "/" + name, modified: true), t < cutoff { remove(name) }
                continue
            }
            let reason = name + ".reason.json"
            let age = present.contains(reason) ? changed(folder + "/" + reason, modified: true) : changed(folder + "/" + name, modified: false)
            guard let age, age < cutoff, changed(folder + "/" + name, modified: false) != nil else { continue }
            remove(name)
            if present.contains(reason) { remove(reason) }
        }
        return (removed, errors)
    }
}
