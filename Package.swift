// swift-tools-version:6.0
import PackageDescription

// The pipeline reads from the layout:
//   Sources/CUV, CSQLite, CPQ, CCrypto, CPosix, CVips, CAVCodec, CDe265, CCurl, CXML2  thin system-library targets (C headers only)
//   Sources/StageKit                the stage contract, pure Swift (no C): Stage, StageOutcome, JobContext, WorkingSet,
//                                   options, registry, environment, job definitions, PhotomemoError, RetryPolicy,
//                                   JobStateMachine, JSON, logging
//   Sources/HEIF                    HEIF box parsing for compress's HEIC path, pure Swift (fuzzed on its own)
//   Sources/PhotomemoCore           what stages and the engine share below the contract: files opened beneath a folder,
//                                   photo bytes and policy, SHA-256 (OpenSSL), subprocesses, XMP (libxml2)
//   Sources/ControlProtocol         the socket's contract shared by daemon and CLI: commands, argument keys, reply envelope; the client (ControlClient)
//   Sources/EventLoop               libuv wrappers (loop, timer, signal, inotify watcher, work queue)
//   Sources/SQL                     what the journal and index need of a SQL engine: SQLConnection, values, rows, one migration runner
//   Sources/SQLite                  the SQLite connection and statements
//   Sources/Postgres                the libpq connection (blocking, for worker threads), LISTEN/NOTIFY; PostgresDatabase is its SQLConnection
//   Sources/Journal                 the job store's protocols and the durable journal (SQLite or PostgreSQL)
//   Sources/Index                   records: typed fields, predicate language, ACL, change feed
//   Sources/HTTP                    one libcurl request type (webhooks, S3)
//   Sources/Notify                  delivering events: signed webhook POSTs, exec sinks
//   Sources/Stores                  asset stores: local content-addressed folder, S3 over libcurl
//   Sources/Runtime                 inbox + queue intake, scheduler, daemon lifecycle
//   Plugins/<Stage>                 one folder per stage plugin
//   Sources/photomemo               the executable: daemon (`serve`) and CLI
let package = Package(
    name: "photomemo",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "photomemo", targets: ["photomemo"]),
        .executable(name: "photomemo-bench", targets: ["photomemo-bench"]),
        // For the fuzz targets in Fuzz/, a package of its own that depends on this one by path.
        .library(name: "StageKit", targets: ["StageKit"]),
        .library(name: "PhotomemoCore", targets: ["PhotomemoCore"]),
        .library(name: "Index", targets: ["Index"]),
        .library(name: "Runtime", targets: ["Runtime"]),
        .library(name: "ControlProtocol", targets: ["ControlProtocol"]),
        .library(name: "ValidateStage", targets: ["ValidateStage"]),
        .library(name: "HEIF", targets: ["HEIF"]),
        .library(name: "CompressStage", targets: ["CompressStage"]),
    ],
    targets: [
        .systemLibrary(name: "CUV", path: "Sources/CUV", pkgConfig: "libuv",
                       providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPQ", path: "Sources/CPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CPosix", path: "Sources/CPosix"),
        .systemLibrary(name: "CVips", path: "Sources/CVips", pkgConfig: "vips",
                       providers: [.apt(["libvips-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CAVCodec", path: "Sources/CAVCodec", pkgConfig: "libavcodec",
                       providers: [.apt(["libavcodec-dev"])]),
        .systemLibrary(name: "CDe265", path: "Sources/CDe265", pkgConfig: "libde265",
                       providers: [.apt(["libde265-dev"])]),
        .systemLibrary(name: "CXML2", path: "Sources/CXML2", pkgConfig: "libxml-2.0",
                       providers: [.apt(["libxml2-dev"])]),

        .target(name: "StageKit"),
        .target(name: "HEIF"),
        .target(name: "PhotomemoCore", dependencies: ["StageKit", "CCrypto", "CPosix", "CXML2"]),
        .target(name: "ControlProtocol", dependencies: ["PhotomemoCore", "StageKit"]),
        .target(name: "EventLoop", dependencies: ["CUV", "CPosix", "PhotomemoCore", "StageKit"]),
        .target(name: "SQL", dependencies: ["StageKit"]),
        .target(name: "SQLite", dependencies: ["StageKit", "SQL", "CSQLite"]),
        .target(name: "Postgres", dependencies: ["StageKit", "SQL", "CPQ"]),
        .target(name: "Journal", dependencies: ["PhotomemoCore", "StageKit", "SQLite"]),
        .target(name: "HTTP", dependencies: ["StageKit", "CCurl"]),
        .target(name: "Stores", dependencies: ["PhotomemoCore", "StageKit", "HTTP"]),
        .target(name: "Index", dependencies: ["PhotomemoCore", "StageKit", "SQL", "SQLite", "Postgres"]),
        .target(name: "Notify", dependencies: ["PhotomemoCore", "StageKit", "HTTP"]),
        .target(name: "Runtime", dependencies: ["PhotomemoCore", "StageKit", "ControlProtocol", "EventLoop", "Journal", "Index", "Stores", "Notify", "Postgres", "CPosix"]),

        .target(name: "ValidateStage", dependencies: ["PhotomemoCore", "StageKit", "HEIF"], path: "Plugins/Validate"),
        .target(name: "ExecStage", dependencies: ["PhotomemoCore", "StageKit"], path: "Plugins/Exec"),
        .target(name: "CommentStage", dependencies: ["PhotomemoCore", "StageKit"], path: "Plugins/Comment"),
        .target(name: "NotifyStage", dependencies: ["StageKit", "Index"], path: "Plugins/Notify"),
        .target(name: "IndexStage", dependencies: ["StageKit", "Index"], path: "Plugins/Index"),
        .target(name: "UploadStage", dependencies: ["PhotomemoCore", "StageKit", "Stores"], path: "Plugins/Upload"),
        // Optimised in debug builds too: the resampler's SIMD loops run ~30x slower unoptimised,
        // and the tests and integration daemons decode real photos with them.
        .target(name: "CompressStage", dependencies: ["PhotomemoCore", "StageKit", "CVips", "HEIF", "CAVCodec"], path: "Plugins/Compress",
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),

        .executableTarget(name: "photomemo-bench", dependencies: [
            "ControlProtocol", "CompressStage", "IndexStage", "ExecStage", "Stores", "Index", "Journal", "PhotomemoCore", "StageKit", "Postgres",
            "HEIF", "CDe265",
        ]),
        .executableTarget(name: "photomemo", dependencies: [
            "PhotomemoCore", "StageKit", "ControlProtocol", "Runtime", "ValidateStage", "ExecStage", "CommentStage", "CompressStage", "UploadStage", "IndexStage", "NotifyStage",
        ]),

        .target(name: "TestSupport", dependencies: ["PhotomemoCore", "StageKit", "SQL"], path: "Tests/TestSupport"),
        .testTarget(name: "PhotomemoCoreTests", dependencies: ["PhotomemoCore", "StageKit", "TestSupport"]),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "CUV", "PhotomemoCore", "StageKit"]),
        .testTarget(name: "JournalTests", dependencies: ["Journal", "SQLite", "Postgres", "StageKit", "TestSupport"]),
        .testTarget(name: "StageTests", dependencies: ["ValidateStage", "ExecStage", "UploadStage", "IndexStage", "NotifyStage", "Index",
                                                     "PhotomemoCore", "StageKit", "TestSupport"]),
        .testTarget(name: "IndexTests", dependencies: ["Index", "SQLite", "Postgres", "PhotomemoCore", "StageKit", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "StageKit"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "SQL", "EventLoop", "StageKit", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Stores", "PhotomemoCore", "StageKit", "TestSupport"]),
        .testTarget(name: "CompressTests", dependencies: ["CompressStage", "ValidateStage", "HEIF", "PhotomemoCore", "StageKit", "TestSupport", "CVips"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "NotifyTests", dependencies: ["Notify", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "ControlProtocol", "PhotomemoCore", "StageKit", "EventLoop", "Journal", "Index", "Stores"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Journal", "Index", "SQLite", "Postgres", "PhotomemoCore", "StageKit", "TestSupport", "CompressStage", "photomemo"],
                    exclude: ["Fixtures"]),
    ]
)
