import FuzzDriver
import StageKit

// A queue line → MemoJob: refused with bad_job (the line goes to quarantine), or a job that
// survives the way the journal keeps it (job.json) and the way `enqueue` reads a job
// object (MemoJob(json:)) unchanged.
runFuzzer { bytes in
    let line = Array(bytes)
    let job: MemoJob
    do {
        job = try MemoJob.parse(line: line)
    } catch let e as PhotomemoError {
        guard e.code == .badJob else { bug("refused with \(e.code), not bad_job: \(e.message)") }
        return
    } catch {
        bug("refused with a foreign error: \(error)")
    }
    let stored = job.json
    do {
        guard try MemoJob(json: stored) == job else { bug("MemoJob(json: job.json) differs from \(job)") }
        guard try MemoJob.parse(line: Array(stored.jsonString.utf8)) == job else { bug("re-parsing \(stored.jsonString) differs") }
    } catch {
        bug("a job's own JSON is refused: \(stored.jsonString) (\(error))")
    }
}
