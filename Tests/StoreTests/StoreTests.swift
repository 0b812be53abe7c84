import Foundation
import PhotomemoCore
import StageKit
import TestSupport
import Testing
@testable import Stores

func tempDir(_ tag: String) throws -> String {
    let d = NSTemporaryDirectory() + "pm-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

func photoFile(_ name: String) -> (path: String, sha: String) {
    let path = testPhotos.appendingPathComponent(name).path
    return (path, try! SHA256.hexOfFile(atPath: path).hex)
}

/// Reads `key` back in `chunk`-byte pieces (as the asset stream does) and returns the
/// SHA-256 of the pieces put together, and how many pieces it took.
func chunkedDigest(_ store: any AssetStore, _ key: String, size: Int64, chunk: Int) throws -> (String, Int) {
    var all: [UInt8] = []
    var pieces = 0
    while Int64(all.count) < size {
        let part = try store.read(key: key, offset: Int64(all.count), count: chunk)
        guard !part.isEmpty else { break }
        all += part
        pieces += 1
    }
    return (SHA256.hex(Data(all)), pieces)
}

@Suite struct LocalStoreTests {
    @Test func anObjectReadsBackInChunks() throws {
        let store = try LocalStore(root: try tempDir("store"))
        let (path, sha) = photoFile("Nikon_D70.jpg")
        let key = LocalStore.key(sha256: sha)
        try store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:])
        let size = try #require(try store.head(key: key))
        let (digest, pieces) = try chunkedDigest(store, key, size: size, chunk: 65536)
        #expect(digest == sha)
        #expect(pieces == Int((size + 65535) / 65536))
        #expect(try store.read(key: key, offset: size, count: 100).isEmpty)
        #expect(try store.read(key: key, offset: size - 10, count: 100).count == 10)
        #expect(throws: StoreFailure.self) { try store.read(key: "sha256/no/such/key", offset: 0, count: 10) }
    }

    @Test func samePhotoTwiceIsOneObjectWithItsBytes() throws {
        let root = try tempDir("store")
        let store = try LocalStore(root: root)
        let (path, sha) = photoFile("Nikon_D70.jpg")
        let key = LocalStore.key(sha256: sha)
        #expect(key == "sha256/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)")
        #expect(try store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:]))
        #expect(try !store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:]))
        #expect(try store.list(prefix: "sha256/") == [key])
        #expect(try SHA256.hexOfFile(atPath: root + "/" + key).hex == sha)
        let perms = try FileManager.default.attributesOfItem(atPath: root + "/" + key)[.posixPermissions] as? Int
        #expect(perms == 0o640)
        #expect(try store.head(key: key) == Int64(try Data(contentsOf: URL(fileURLWithPath: path)).count))
        let copy = root + "/copy.jpg"
        try store.get(key: key, to: copy)
        #expect(try SHA256.hexOfFile(atPath: copy).hex == sha)
        try store.delete(key: key)
        #expect(try store.head(key: key) == nil)
        #expect(try store.list(prefix: "sha256/").isEmpty)
        // Deleting what is gone is done, as on S3: the asset collector retried such a key
        // every round, warning each time, and never forgot it.
        try store.delete(key: key)
    }

    @Test func aFileThatChangedSinceHashingIsRefusedAndLeavesNoObject() throws {
        let store = try LocalStore(root: try tempDir("store"))
        let (path, _) = photoFile("Nikon_D70.jpg")
        let wrong = String(repeating: "0", count: 64)
        #expect(throws: StoreFailure.self) {
            try store.put(file: path, key: LocalStore.key(sha256: wrong), sha256: wrong, contentType: "image/jpeg", metadata: [:])
        }
        #expect(try store.head(key: LocalStore.key(sha256: wrong)) == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.tmp).isEmpty)
    }

    @Test func storeSpecsOpenTheRightStore() throws {
        let home = URL(fileURLWithPath: try tempDir("home"))
        #expect(try Stores.open("file:store", home: home).name == "file:" + home.path + "/store")
        #expect(throws: PhotomemoError.self) { try Stores.open("ftp://x", home: home) }
        #expect(throws: PhotomemoError.self) { try S3Store(url: "s3://bucket", environment: [:]) }
        let s3 = try S3Store(url: "s3://bucket/a/b?endpoint=http://127.0.0.1:9000&region=eu-west-1",
                             environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
        #expect(s3.url("sha256/ab/cd/x") == "http://127.0.0.1:9000/bucket/a/b/sha256/ab/cd/x")
        #expect(s3.region == "eu-west-1")
        #expect(S3Store.encodePath("a b/ü") == "a%20b/%C3%BC")
    }
}

/// The request counter behind `photomemo_store_requests_total`.
@Suite struct S3RequestCounterTests {
    @Test func countsEveryAttemptByMethodPerStoreAndForTheProcess() throws {
        // Nothing listens on port 1: each request is refused, and still counted (it was sent).
        let store = try S3Store(url: "s3://b?endpoint=http://127.0.0.1:1", environment: ["AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"])
        let before = S3Store.processRequests.byMethod["DELETE", default: 0]
        #expect(throws: (any Error).self) { try store.head(key: "x") }
        #expect(throws: (any Error).self) { try store.delete(key: "x") }
        #expect(throws: (any Error).self) { try store.delete(key: "y") }
        #expect(store.requests.byMethod == ["HEAD": 1, "DELETE": 2])
        // Copies share the counter; other tests may add to the process total, never take from it.
        let copy = store
        #expect(copy.requests.byMethod["DELETE"] == 2)
        #expect(S3Store.processRequests.byMethod["DELETE", default: 0] >= before + 2)
    }
}

/// Against a real SeaweedFS on loopback, started by scripts/seaweedfs.
@Suite(.serialized) struct S3StoreTests {
    @Test func putHeadGetListDeleteAgainstARealServer() throws {
        let s3 = try SeaweedFS()
        let store = try S3Store(url: s3.storeURL, environment: s3.environment)
        let (path, sha) = photoFile("orientation_landscape_1.jpg")
        let key = S3Store.key(sha256: sha)
        #expect(try store.head(key: key) == nil)
        #expect(try store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: ["job": "1", "rendition": "original"]))
        // A new object: a HEAD to look, then one PUT.
        #expect(store.requests.byMethod == ["HEAD": 2, "PUT": 1])
        // HEAD first: the same bytes again are not sent again.
        #expect(try !store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:]))
        #expect(try store.head(key: key) == Int64(try Data(contentsOf: URL(fileURLWithPath: path)).count))
        // An independent client reads the same bytes.
        let fetched = try #require(s3.fetchWithCurl("pm/" + key))
        #expect(SHA256.hex(fetched) == sha)
        let copy = s3.dir + "/copy.jpg"
        try store.get(key: key, to: copy)
        #expect(try SHA256.hexOfFile(atPath: copy).hex == sha)
        #expect(try store.list(prefix: "sha256/") == [key])
        try store.delete(key: key)
        #expect(try store.head(key: key) == nil)
        try store.delete(key: key)  // gone already: done
    }

    @Test func rangedGetsReadAnObjectInChunks() throws {
        let s3 = try SeaweedFS()
        let store = try S3Store(url: s3.storeURL, environment: s3.environment)
        let (path, sha) = photoFile("orientation_landscape_1.jpg")
        let key = S3Store.key(sha256: sha)
        try store.put(file: path, key: key, sha256: sha, contentType: "image/jpeg", metadata: [:])
        let size = try #require(try store.head(key: key))
        let (digest, pieces) = try chunkedDigest(store, key, size: size, chunk: 50_000)
        #expect(digest == sha)
        #expect(pieces == Int((size + 49_999) / 50_000))
        #expect(try store.read(key: key, offset: size - 7, count: 100).count == 7)
        #expect(try store.read(key: key, offset: size, count: 100).isEmpty)
    }

    @Test func theServerVerifiesTheChecksum() throws {
        let s3 = try SeaweedFS()
        let store = try S3Store(url: s3.storeURL, environment: s3.environment)
        let (path, _) = photoFile("Nikon_D70.jpg")
        let wrong = String(repeating: "ab", count: 32)
        do {
            try store.put(file: path, key: S3Store.key(sha256: wrong), sha256: wrong, contentType: "image/jpeg", metadata: [:])
            Issue.record("a wrong checksum was accepted")
        } catch let f as StoreFailure {
            #expect(f.kind == .permanent, "\(f)")
            #expect(f.message.lowercased().contains("digest") || f.message.lowercased().contains("checksum"), "\(f.message)")
        }
    }

    @Test func wrongCredentialsArePermanentWithTheServersMessage() throws {
        let s3 = try SeaweedFS()
        var env = s3.environment
        env["AWS_SECRET_ACCESS_KEY"] = "wrong"
        let store = try S3Store(url: s3.storeURL, environment: env)
        let (path, sha) = photoFile("Nikon_D70.jpg")
        do {
            try store.put(file: path, key: S3Store.key(sha256: sha), sha256: sha, contentType: "image/jpeg", metadata: [:])
            Issue.record("wrong credentials accepted")
        } catch let f as StoreFailure {
            #expect(f.kind == .permanent)
            #expect(f.message.contains("403") && f.message.contains("access denied"), "\(f.message)")
        }
    }

    @Test func aStoppedServerIsAnOutage() throws {
        let s3 = try SeaweedFS()
        let store = try S3Store(url: s3.storeURL, environment: s3.environment)
        s3.stop()
        do {
            _ = try store.head(key: "sha256/00/00/x")
            Issue.record("no error from a stopped server")
        } catch let f as StoreFailure {
            #expect(f.kind == .unavailable, "\(f)")
        }
    }
}
