import CCrypto
import Foundation
import Synchronization
import StageKit

/// SHA-256 through OpenSSL's EVP interface; streaming so a 50 MB photo is never read whole.
public struct SHA256: ~Copyable {
    private let ctx: OpaquePointer

    public init() {
        ctx = EVP_MD_CTX_new()!
        EVP_DigestInit_ex(ctx, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        if let base = bytes.baseAddress, bytes.count > 0 {
            EVP_DigestUpdate(ctx, base, bytes.count)
            Self.hashed.wrappingAdd(Int64(bytes.count), ordering: .relaxed)
        }
    }

    private static let hashed = Atomic<Int64>(0)

    /// Bytes this process has hashed so far (`photomemo_sha256_bytes_total`): shows how
    /// many times each photo is read for a hash without a benchmark.
    public static var processBytes: Int64 { hashed.load(ordering: .relaxed) }

    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    public consuming func finalizeHex() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        EVP_DigestFinal_ex(ctx, &digest, &len)
        return Self.hex(bytes: digest)
    }

    /// Lower-case hex of `bytes` (String(format:) per byte costs ~1 µs: this is on the index's write path).
    public static func hex(bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func hex(_ data: Data) -> String {
        var h = SHA256()
        h.update(data)
        return h.finalizeHex()
    }

    /// The hash of the `size` bytes left to read from `fd` (`readSized`); nil when the file
    /// holds more or fewer. Read to its end, a file grown sparse to a terabyte as it was
    /// opened held intake (everyone's drops, the socket's enqueue, SIGTERM) as long as its
    /// owner liked.
    public static func hex(ofOpenFile fd: Int32, path: String, size: Int64) throws -> String? {
        var h = SHA256()
        do {
            return try readSized(fd, path: path, size: size) { h.update($0) } ? h.finalizeHex() : nil
        } catch let e as SystemError {
            throw PhotomemoError(.io, "cannot \(e)")
        }
    }

    public static func hexOfFile(atPath path: String) throws -> (hex: String, bytes: Int64) {
        guard let fh = FileHandle(forReadingAtPath: path) else {
            throw PhotomemoError(.io, "cannot open \(path)")
        }
        defer { try? fh.close() }
        var h = SHA256()
        var total: Int64 = 0
        while true {
            let chunk = try fh.read(upToCount: 1 << 20) ?? Data()
            if chunk.isEmpty { break }
            total += Int64(chunk.count)
            h.update(chunk)
        }
        return (h.finalizeHex(), total)
    }
}

/// HMAC-SHA256 (webhook signatures), through OpenSSL.
public enum HMACSHA256 {
    public static func hex(key: String, data: Data) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        var len: UInt32 = 0
        let keyBytes = Array(key.utf8)
        data.withUnsafeBytes { d in
            _ = HMAC(EVP_sha256(), keyBytes, Int32(keyBytes.count), d.bindMemory(to: UInt8.self).baseAddress, d.count, &out, &len)
        }
        return SHA256.hex(bytes: out.prefix(Int(len)))
    }
}
