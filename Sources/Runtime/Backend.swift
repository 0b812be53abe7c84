import Foundation
import PhotomemoCore
import Journal
import Index

/// The engines the job definition's `database` names, opened once at start: the job
/// journal and the record index. On `sqlite:FILE` both live in that one file.
struct Backend {
    let journal: any JobJournal
    let records: any RecordIndex

    init(environment: StageEnvironment) throws {
        let records = try environment.recordIndex()
        guard let file = records as? RecordStore else {
            throw PhotomemoError(.badDefinition, "database \"\(environment.database)\": only sqlite:FILE is built")
        }
        self.records = records
        journal = try Journal(path: file.path)
    }
}
