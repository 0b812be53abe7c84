import Glibc

/// Text to stdout and stderr through write(2). FileHandle's non-throwing `write(_:)` traps
/// when the write fails — a log file on a full disk, a closed pipe (`photomemo jobs | head`)
/// — and a daemon must never die of its own log line: here the text is lost, nothing else.
public enum StandardStream {
    public static func out(_ text: String) { write(1, text) }
    public static func err(_ text: String) { write(2, text) }

    static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var off = 0
        while off < bytes.count {
            let n = try? syscall("write", blocking: { bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) } })
            guard let n, n > 0 else { return }
            off += n
        }
    }
}
