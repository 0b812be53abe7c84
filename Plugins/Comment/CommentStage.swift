import Foundation
import PhotomemoCore
import StageKit

/// `comment`: writes a JPEG comment (a COM segment, which every viewer ignores for the
/// picture) into one of the job's JPEG renditions, placed between compress and upload.
/// The example of docs/writing-a-stage.md: it replaces a file of the working set with new
/// bytes and their hash, and upload stores those.
///
/// Idempotent on the job: the new file's name comes from the rendition's, and a run again
/// after the rendition it read was replaced (and removed) finds its own output.
public struct CommentStage: Stage {
    public static let name = "comment"
    public static let summary = "writes a JPEG comment (COM segment) naming the job into a JPEG rendition"
    public static let workload = StageWorkload.io
    /// It rewrites a rendition file, on the host that made it.
    public static let photoLocal = true
    public static let readsMemo = false
    public static let options: [StageOption] = [
        StageOption("rendition", .string, default: "display", "the rendition written into (a JPEG one; others are skipped)"),
        StageOption("text", .string, default: "photomemo", "the comment; the job's key follows it"),
    ]

    let rendition: String
    let text: String

    public init(options: StageOptions, environment: StageEnvironment) throws {
        rendition = options.string("rendition") ?? "display"
        text = options.string("text") ?? "photomemo"
        guard text.utf8.count <= 60_000 else { throw PhotomemoError(.badDefinition, "\"text\" is over 60,000 bytes (a COM segment holds 65,533)") }
    }

    public func run(_ job: JobContext) -> StageOutcome {
        let role = WorkingSet.Role.rendition(rendition)
        guard let file = job.working[role] else { return .skip(reason: "no \(rendition) rendition") }
        guard file.format == "jpeg" else { return .skip(reason: "\(rendition) is not a JPEG") }
        let output = (file.path as NSString).deletingPathExtension + ".comment.jpg"
        let bytes: Data
        do {
            if let input = FileManager.default.contents(atPath: file.path) {
                guard input.starts(with: [0xFF, 0xD8]) else { return .fail(reason: "\(rendition) \(file.path) is not a JPEG (no SOI marker)") }
                bytes = Self.commented(input, "\(text) \(job.key)")
                try DurableFile.write(bytes, to: output)
                if file.path != output { unlink(file.path) }
            } else if let done = FileManager.default.contents(atPath: output) {
                bytes = done  // a run before this one wrote it, then its journal write was lost
            } else {
                return .fail(reason: "\(rendition) \(file.path) is gone")
            }
        } catch {
            return StageOutcome(catching: error, otherwise: { .retry(reason: "cannot write \(output): \($0)") })
        }
        let sha = SHA256.hex(bytes)
        job.update { set in
            set.change(role) { f in (f.path, f.sha256, f.bytes) = (output, sha, Int64(bytes.count)) }
        }
        return .continue(result: ["rendition": .string(rendition), "path": .string(output), "sha256": .string(sha)])
    }

    /// `jpeg` with a COM segment holding `comment` right after its SOI marker.
    static func commented(_ jpeg: Data, _ comment: String) -> Data {
        let body = Array(comment.utf8.prefix(65_533))
        let length = body.count + 2
        var out = Data([0xFF, 0xD8, 0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)])
        out.append(contentsOf: body)
        out.append(jpeg.dropFirst(2))
        return out
    }
}
