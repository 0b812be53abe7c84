import FuzzDriver
import PhotomemoCore
import StageKit

// An XMP sidecar's bytes → its memo job (libxml2 under XMPMemo, then the memo-line rules):
// refused with bad_job (its photo's job fails naming it), or a job that survives the way
// the journal keeps it (job.json → MemoJob(json:)) unchanged. No text of a file the input
// names (an external entity) may reach the job.
runFuzzer { bytes in
    let job: MemoJob
    do {
        job = try MemoSidecar.parse(Array(bytes), xmp: true, photo: "IMG_0001.jpg", owner: "alice")
    } catch let e as PhotomemoError {
        guard e.code == .badJob else { bug("refused with \(e.code), not bad_job: \(e.message)") }
        return
    } catch {
        bug("refused with a foreign error: \(error)")
    }
    guard job.photo == "IMG_0001.jpg", job.owner == "alice", job.type == "Photo" else { bug("photo, owner or type not the sidecar's: \(job)") }
    let stored = job.json
    if stored.jsonString.contains("root:x:0:0") { bug("/etc/passwd reached the job: \(stored.jsonString)") }
    do {
        guard try MemoJob(json: stored) == job else { bug("MemoJob(json: job.json) differs from \(job)") }
    } catch {
        bug("a job's own JSON is refused: \(stored.jsonString) (\(error))")
    }
}
