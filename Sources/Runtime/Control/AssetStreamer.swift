import EventLoop
import Foundation
import Index
import StageKit

/// `asset`: a rendition's bytes in chunks, so the daemon never holds a whole original.
///
///     {"id":N,"ok":true,"result":{"key","bytes","format","sha256","chunks":K}}
///     {"event":"asset_chunk","id":N,"seq":0,"data":"<base64 of up to 256 KiB>"}   × K
///     {"event":"asset_end","id":N,"bytes":B}
///
/// or, if the object cannot be read to its end, a final
/// `{"event":"asset_error","id":N,"error":{"code","message"}}` instead of `asset_end`.
/// The connection paces the reads (`ControlConnection.pumpStreams`).
extension RecordHandlers {
    func streamAsset(_ req: ControlRequest, records: any RecordIndex, viewer: Viewer, to conn: ControlConnection,
                     reply: @escaping Reply) throws {
        let id = try req.requiredString("record")
        let rendition = try req.requiredString("rendition")
        let assets = self.assets
        let requestID = req.values["id"] ?? .null
        let loop = self.loop
        loop.submit({ () -> Result<AssetStream.Header, PhotomemoError> in
            do {
                guard let r = try records.get(id, viewer: viewer) else { throw RecordWriteError.notFound }
                guard let asset = r.assets[rendition], let key = asset["key"]?.stringValue else {
                    throw PhotomemoError(.notFound, "record \(id) has no \(rendition) asset; it has: \((r.assets.objectValue ?? [:]).keys.sorted().joined(separator: ", "))")
                }
                guard let size = try assets.head(key: key) else {
                    throw PhotomemoError(.notFound, "the \(rendition) object \(key) is not in \(assets.name)")
                }
                return .success(AssetStream.Header(key: key, bytes: size, format: asset["format"] ?? .null, sha256: asset["sha256"]))
            } catch {
                let e = Self.recordError(error)
                return .failure(e as? PhotomemoError ?? PhotomemoError(.internalError, "\(e)"))
            }
        }) { [weak conn] result in
            switch result {
            case .failure(let e): reply(.failure(e))
            case .success(let header):
                // Adopted before the reply is written; its first chunk is read off the loop, so it follows the reply line.
                conn?.adoptStream(AssetStream(header: header, requestID: requestID, store: assets, loop: loop))
                reply(.success(header.json))
            }
        }
    }
}

/// One `asset` reply being streamed: reads the next chunk off the loop and hands back
/// the line(s) to send; the object is content-addressed, so its chunks never change.
final class AssetStream {
    struct Header: Sendable {
        let key: String
        let bytes: Int64
        let format: JSONValue
        let sha256: JSONValue?

        var chunks: Int64 { (bytes + Int64(AssetStream.chunkBytes) - 1) / Int64(AssetStream.chunkBytes) }

        var json: JSONValue {
            var o: [String: JSONValue] = ["key": .string(key), "bytes": .int(bytes), "format": format, "chunks": .int(chunks)]
            if let sha256 { o["sha256"] = sha256 }
            return .object(o)
        }
    }

    static let chunkBytes = 256 << 10
    /// What one chunk line costs in the write buffer: base64 is 4/3 of the bytes.
    static let lineBytes = chunkBytes / 3 * 4 + 128

    let header: Header
    let requestID: JSONValue
    let store: any AssetStore
    let loop: EventLoop
    private(set) var isReading = false
    private var offset: Int64 = 0
    private var seq = 0

    init(header: Header, requestID: JSONValue, store: any AssetStore, loop: EventLoop) {
        self.header = header
        self.requestID = requestID
        self.store = store
        self.loop = loop
    }

    /// Reads the next chunk on the pool; `done` gets, on the loop, the bytes of its
    /// line (with the end or error line after the last) and whether the stream is over.
    func readNext(_ done: @escaping ([UInt8], Bool) -> Void) {
        isReading = true
        let (store, key, size, offset, seq) = (store, header.key, header.bytes, offset, seq)
        let requestID = requestID
        let id = requestID.jsonString
        let want = Int(min(Int64(Self.chunkBytes), size - offset))
        loop.submit({ () -> ([UInt8], Int, Bool) in
            var line = ""
            var got = 0
            do {
                if want > 0 {
                    let chunk = try store.read(key: key, offset: offset, count: want)
                    got = chunk.count
                    guard got == want else { throw PhotomemoError(.io, "\(key) ended at \(offset + Int64(got)) bytes, expected \(size)") }
                    // Built by hand: base64 needs no JSON escaping, and a 350 KB string is not worth a JSON tree.
                    line = #"{"event":"asset_chunk","id":\#(id),"seq":\#(seq),"data":""# + Data(chunk).base64EncodedString() + "\"}\n"
                }
                let finished = offset + Int64(got) >= size
                if finished { line += JSONValue.object(["event": "asset_end", "id": requestID, "bytes": .int(size)]).jsonString + "\n" }
                return (Array(line.utf8), got, finished)
            } catch {
                let e = error as? PhotomemoError ?? PhotomemoError(.io, "\(error)")
                let end: JSONValue = ["event": "asset_error", "id": requestID,
                                      "error": ["code": .string(e.code.rawValue), "message": .string(e.message)]]
                return (Array((end.jsonString + "\n").utf8), 0, true)
            }
        }) { [self] line, got, finished in
            self.offset += Int64(got)
            self.seq += 1
            self.isReading = false
            done(line, finished)
        }
    }
}
