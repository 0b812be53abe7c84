import Foundation
import Glibc
import StageKit

extension InboxOptions.Originals {
    /// What becomes of the inbox file `name` of `folder` (`relative` in the inbox) once what
    /// it holds is safe: removed (`delete`), moved to `done` + its flat name (`move`:
    /// `DCIM%2FIMG_1.jpg`, so two folders' `IMG_1.jpg` never meet), or left (`keep`). Both
    /// the upload stage (a stored photo) and intake (a memo sidecar applied) release this way.
    public func release(_ name: String, in folder: OpenFolder, as relative: String, done: String) throws {
        switch self {
        case .keep: return
        case .delete: try folder.remove(name)
        case .move:
            try FileManager.default.createDirectory(atPath: done, withIntermediateDirectories: true)
            let target = done + "/" + PhotoPolicy.flatName(relative)
            try syscall("rename \(folder.path)/\(name) to \(target)", blocking: { renameat(folder.fd, name, AT_FDCWD, target) })
        }
    }
}
