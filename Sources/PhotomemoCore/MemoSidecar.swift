import Glibc
import StageKit

/// A memo that travels with a photo as a file beside it, in the same folder:
/// `NAME.EXT.json` or `NAME.json` (a memo line's keys but `photo`, `owner`, `record`), `NAME.EXT.xmp` or
/// `NAME.xmp` (see `XMPMemo`). Names here are inbox-relative and may have a folder part
/// (`DCIM/IMG_1.jpg`): a sidecar is always looked for in its photo's folder.
public enum MemoSidecar {
    /// A sidecar is read whole to be parsed; a bigger one fails its photo's job unread.
    public static let maxBytes = MemoJob.maxLineBytes
    /// How a job failed by its sidecar starts its reason (a fixed sidecar retakes the photo).
    public static let failurePrefix = "memo sidecar "
    static let endings = ["json", "xmp"]

    /// The sidecar names a photo may have, the one that counts first: the more specific
    /// `NAME.EXT.*` before `NAME.*`, JSON (photomemo's own) before XMP; each also in upper case.
    public static func candidates(forPhoto photo: String) -> [String] {
        let (folder, base) = split(photo)
        var stems = [base]
        if let dot = base.lastIndex(of: "."), dot != base.startIndex { stems.append(String(base[..<dot])) }
        var out: [String] = []
        for ending in endings {
            for stem in stems {
                // Never the photo itself: an image named `X.json` read as its own sidecar failed.
                for e in [ending, ending.uppercased()] where !out.contains(folder + stem + "." + e) && folder + stem + "." + e != photo {
                    out.append(folder + stem + "." + e)
                }
            }
        }
        return out
    }

    /// The photos a file named like a sidecar may belong to (nil: not a sidecar's name):
    /// `IMG.jpg.json` → `IMG.jpg` (the photo's name exactly, case and all: it is not
    /// `IMG.JPG`'s); `IMG.json` → `IMG.<photo extension>` in any case (`IMG.jpg`, `IMG.JPG`,
    /// `IMG.Jpg`, `IMG.heic`...), as a photo finds `IMG.json` whatever its extension's case.
    public static func photoNames(forSidecar name: String) -> [String]? {
        let (folder, base) = split(name)
        guard let ext = PhotoPolicy.fileExtension(base), endings.contains(ext) else { return nil }
        let rest = String(base.dropLast(ext.utf8.count + 1))
        guard !rest.isEmpty else { return nil }
        if let photoExt = PhotoPolicy.fileExtension(rest), PhotoPolicy.photoExtensions.contains(photoExt) { return [folder + rest] }
        return PhotoPolicy.photoExtensions.sorted().flatMap { caseVariants($0).map { folder + rest + "." + $0 } }
    }

    /// `ext` in every mix of cases, lower first, then upper (`jpg`, `JPG`, `Jpg`...).
    static func caseVariants(_ ext: String) -> [String] {
        var out = [""]
        for c in ext { out = out.flatMap { [$0 + c.lowercased(), $0 + c.uppercased()] } }
        let (lower, upper) = (ext.lowercased(), ext.uppercased())
        return [lower, upper] + out.filter { $0 != lower && $0 != upper }
    }

    /// The sidecar that counts for the photo `photo` (inbox-relative) in `folder`, the
    /// photo's folder held open: the first candidate that is a regular file of the photo's
    /// owner (`uid`); another user's file beside it is no memo of theirs and is passed over.
    /// Looked up in the held folder, never by path: a folder on the way swapped for a link
    /// to one the photo's owner cannot read must not be read, nor tell what is there.
    public static func locate(in folder: OpenFolder, photo: String, uid: uid_t) -> (name: String, stat: stat)? {
        for name in candidates(forPhoto: photo) {
            guard let st = folder.entry(split(name).1), st.st_mode & S_IFMT == S_IFREG, st.st_uid == uid else { continue }
            return (name, st)
        }
        return nil
    }

    /// The sidecar (its name in `folder`) that leaves with the photo `base` of `folder`,
    /// owned by `uid`, when the original is released (deleted or moved): the one that
    /// counts for it, unless another photo beside it still uses it (`IMG.json` of both
    /// `IMG.jpg` and `IMG.heic`). `folder` is the photo's folder held open, as the release
    /// holds it: the sidecar is looked up where the photo is, never through a path.
    public static func releasedWith(photo base: String, uid: uid_t, in folder: OpenFolder) -> String? {
        guard let (name, _) = locate(in: folder, photo: base, uid: uid) else { return nil }
        for other in photoNames(forSidecar: name) ?? [] where other != base {
            if let o = folder.entry(other), o.st_uid == uid { return nil }
        }
        return name
    }

    /// Reads and checks the sidecar `name` (inbox-relative) in `folder`, its photo's folder
    /// held open (opened without following a link; the inode `expected` if given): the memo
    /// it holds for a photo of `owner`, or `bad_job` with why. The size is checked on the
    /// open file before a byte is read.
    public static func read(in folder: OpenFolder, _ name: String, expected: (dev: UInt64, ino: UInt64)? = nil, photo: String, owner: String?) throws -> MemoJob {
        let path = folder.path + "/" + split(name).1
        let fd = try folder.open(split(name).1, O_RDONLY | O_NONBLOCK)
        defer { close(fd) }
        var st = stat()
        try syscall("fstat \(path)", blocking: { fstat(fd, &st) })
        guard st.st_mode & S_IFMT == S_IFREG else { throw PhotomemoError(.badJob, "is not a regular file") }
        if let expected, expected != (UInt64(st.st_dev), UInt64(st.st_ino)) { throw PhotomemoError(.badJob, "was replaced while read") }
        guard st.st_size <= Int64(maxBytes) else {
            throw PhotomemoError(.badJob, "is \(st.st_size) bytes, over the \(maxBytes) a memo sidecar may have")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var got = 0
        while got < bytes.count {
            let n = try syscall("read \(path)", blocking: { bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, $0.count - got) } })
            if n == 0 { break }
            got += n
        }
        return try parse(Array(bytes.prefix(got)), xmp: PhotoPolicy.fileExtension(path) == "xmp", photo: photo, owner: owner)
    }

    /// The memo job a sidecar's bytes make for `photo`: checked by the memo-line rules
    /// (`MemoJob(line:)`), with no `photo`, `owner` or `record` of its own (the photo is
    /// the file beside it, the owner the files' owner). An XMP memo is of type `Photo`.
    public static func parse(_ bytes: [UInt8], xmp: Bool, photo: String, owner: String?) throws -> MemoJob {
        var job: MemoJob
        if xmp {
            job = try MemoJob(line: XMPMemo.memoLine(bytes))
            job.type = MemoJob.defaultPhotoType
        } else {
            job = try MemoJob.parse(line: bytes)
            for (key, value) in [("photo", job.photo), ("owner", job.owner), ("record", job.record)] where value != nil {
                throw PhotomemoError(.badJob, "\"\(key)\" is not a sidecar's key (valid: acl, fields, key, memo, type): a sidecar's photo is the file beside it, its owner the files' owner")
            }
        }
        job.photo = photo
        job.owner = owner
        return job
    }

    /// (folder with its trailing "/", or "", last component)
    public static func split(_ name: String) -> (String, String) {
        guard let slash = name.lastIndex(of: "/") else { return ("", name) }
        return (String(name[...slash]), String(name[name.index(after: slash)...]))
    }
}
