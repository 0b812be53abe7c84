import CPosix
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
            // Never over a file already there (a name dropped again after a camera's counter
            // reset, or another user's top-level `DCIM%2FIMG_1.jpg`): that one gets `~2`, `~3`, ...
            let flat = done + "/" + PhotoPolicy.flatName(relative)
            for n in 1... {
                let target = n == 1 ? flat : flat + "~\(n)"
                do {
                    try syscall("rename \(folder.path)/\(name) to \(target)", blocking: { pm_rename_noreplace(folder.fd, name, AT_FDCWD, target) })
                    return
                } catch let e as SystemError where e.errno == EEXIST && n < 10_000 {}
            }
        }
    }
}
