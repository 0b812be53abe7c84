import Foundation
import StageKit

/// The environment of an exec stage or exec sink: never the daemon's whole environment
/// (it holds S3 keys, `PGPASSWORD`, failpoints), only `PATH`, `HOME` and `LANG` when the
/// daemon has them, the variables a job definition names, and the caller's documented
/// `PHOTOMEMO_*` values.
public enum SubprocessEnvironment {
    public static let inherited = ["PATH", "HOME", "LANG"]

    /// `PHOTOMEMO_RUN`, set by the daemon in every subprocess (and so its children): this
    /// run's tag, `HOME#instance`, by which its next start finds what a kill left running
    /// (`LeftoverProcesses`). Set once at start, before anything is spawned.
    public static let runVariable = "PHOTOMEMO_RUN"
    public static let runTag = LockedValue<String?>(nil)

    /// `passing`: daemon variables copied when set; `values`: literal NAME → value;
    /// `documented`: the caller's own variables, which win over both.
    public static func clean(passing names: [String] = [], values: [String: String] = [:], documented: [String: String] = [:],
                             from parent: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var env: [String: String] = [:]
        for name in inherited + names { if let v = parent[name] { env[name] = v } }
        env.merge(values) { _, new in new }
        env.merge(documented) { _, new in new }
        if let tag = runTag.value { env[runVariable] = tag }
        return env
    }

    /// A name a job definition may set or pass: a shell identifier, not one of the
    /// `PHOTOMEMO_*` variables the daemon sets itself.
    public static func checkName(_ name: String) throws {
        let ok = name.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } == true
            && name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        guard ok else { throw PhotomemoError(.badDefinition, "\"\(name)\" is not a valid environment variable name") }
        guard !name.hasPrefix("PHOTOMEMO_") else {
            throw PhotomemoError(.badDefinition, "\"\(name)\": PHOTOMEMO_* variables are set by the daemon, not the job definition")
        }
    }
}
