import Foundation
import Index
import Journal
import PhotomemoCore
import StageKit
import Postgres

/// The engines the job definition's `database` names, opened once at start: the job
/// journal and the record index. On `sqlite:FILE` both live in that one file and this
/// daemon is alone on it; on `postgres://…` every daemon naming the same database is one
/// cluster, each with its own host name and leases.
struct Backend {
    let journal: any JobJournal
    let records: any RecordIndex
    /// "sqlite" or "postgres", as `status` shows it.
    let engine: String
    /// The database URL when it is shared (the cluster listener connects to it).
    let sharedURL: String?

    /// `hostID`: already `checked`.
    init(environment: StageEnvironment, hostID: String?, leaseSeconds: Double) throws {
        let spec = environment.database
        guard spec.hasPrefix("postgres://") || spec.hasPrefix("postgresql://") else {
            let records = try environment.recordIndex()
            guard let file = records as? RecordStore else {
                throw PhotomemoError(.badDefinition, "database \"\(spec)\": expected sqlite:FILE or postgres://USER@HOST:PORT/DB")
            }
            self.records = records
            journal = try Journal(path: file.path)
            engine = "sqlite"
            sharedURL = nil
            return
        }
        let host = hostID ?? Self.defaultHost(home: environment.home.path)
        let shown = PostgresConnection.withoutPassword(spec)
        // The record index first: the stages opened it already, with the definition.
        records = try environment.recordIndex()
        journal = try Journal(connection: PostgresDatabase(url: spec), path: shown, host: host, leaseSeconds: leaseSeconds)
        engine = "postgres"
        sharedURL = spec
        Log.notice("database \(shown): host \(host), leases of \(Int(leaseSeconds)) s")
    }

    /// The machine's name and a hash of the home: stable across restarts (a restarted
    /// daemon finds the jobs it was running), distinct for two homes on one machine.
    static func defaultHost(home: String) -> String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        let machine = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).filter { $0.isLetter || $0.isNumber || "-._".contains($0) }
        let path = URL(fileURLWithPath: home).resolvingSymlinksInPath().path
        return (machine.isEmpty ? "host" : machine) + "-" + String(SHA256.hex(Data(path.utf8)).prefix(6))
    }

    static func checked(_ host: String) throws -> String {
        guard !host.isEmpty, host.count <= 64, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) }) else {
            throw PhotomemoError(.badUsage, "--host-id \"\(host)\": use 1–64 letters, digits, '-', '.' or '_'")
        }
        return host
    }
}
