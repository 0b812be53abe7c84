// swift-tools-version:6.0
import PackageDescription

// The pipeline reads from the layout:
//   Sources/CUV, CSQLite, CPQ, CCrypto, CPosix, CVips, CCurl, CXML2  thin system-library targets (C headers only)
//   Sources/PhotomemoCore           stage protocol, job definitions, registry, retry policy, JSON
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
        .library(name: "PhotomemoCore", targets: ["PhotomemoCore"]),
        .library(name: "Index", targets: ["Index"]),
        .library(name: "Runtime", targets: ["Runtime"]),
        .library(name: "ControlProtocol", targets: ["ControlProtocol"]),
        .library(name: "ValidateStage", targets: ["ValidateStage"]),
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
        .systemLibrary(name: "CXML2", path: "Sources/CXML2", pkgConfig: "libxml-2.0",
                       providers: [.apt(["libxml2-dev"])]),

        .target(name: "PhotomemoCore", dependencies: ["CCrypto", "CPosix", "CXML2"]),
        .target(name: "ControlProtocol", dependencies: ["PhotomemoCore"]),
        .target(name: "EventLoop", dependencies: ["CUV", "CPosix", "PhotomemoCore"]),
        .target(name: "SQL", dependencies: ["PhotomemoCore"]),
        .target(name: "SQLite", dependencies: ["PhotomemoCore", "SQL", "CSQLite"]),
        .target(name: "Postgres", dependencies: ["PhotomemoCore", "SQL", "CPQ"]),
        .target(name: "Journal", dependencies: ["PhotomemoCore", "SQLite"]),
        .target(name: "HTTP", dependencies: ["PhotomemoCore", "CCurl"]),
        .target(name: "Stores", dependencies: ["PhotomemoCore", "HTTP"]),
        .target(name: "Index", dependencies: ["PhotomemoCore", "SQL", "SQLite", "Postgres"]),
        .target(name: "Notify", dependencies: ["PhotomemoCore", "HTTP"]),
        .target(name: "Runtime", dependencies: ["PhotomemoCore", "ControlProtocol", "EventLoop", "Journal", "Index", "Stores", "Notify", "Postgres", "CPosix"]),

        .target(name: "ValidateStage", dependencies: ["PhotomemoCore"], path: "Plugins/Validate"),
        .target(name: "ExecStage", dependencies: ["PhotomemoCore"], path: "Plugins/Exec"),
        .target(name: "CommentStage", dependencies: ["PhotomemoCore"], path: "Plugins/Comment"),
        .target(name: "NotifyStage", dependencies: ["PhotomemoCore", "Index"], path: "Plugins/Notify"),
        .target(name: "IndexStage", dependencies: ["PhotomemoCore", "Index"], path: "Plugins/Index"),
        .target(name: "UploadStage", dependencies: ["PhotomemoCore", "Stores"], path: "Plugins/Upload"),
        .target(name: "CompressStage", dependencies: ["PhotomemoCore", "CVips"], path: "Plugins/Compress"),

        .executableTarget(name: "photomemo-bench", dependencies: [
            "ControlProtocol", "CompressStage", "IndexStage", "Stores", "Index", "Journal", "PhotomemoCore", "Postgres",
        ]),
        .executableTarget(name: "photomemo", dependencies: [
            "PhotomemoCore", "ControlProtocol", "Runtime", "ValidateStage", "ExecStage", "CommentStage", "CompressStage", "UploadStage", "IndexStage", "NotifyStage",
        ]),

        .target(name: "TestSupport", dependencies: ["PhotomemoCore"], path: "Tests/TestSupport"),
        .testTarget(name: "PhotomemoCoreTests", dependencies: ["PhotomemoCore", "TestSupport"]),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "CUV", "PhotomemoCore"]),
        .testTarget(name: "JournalTests", dependencies: ["Journal", "SQLite", "Postgres", "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "StageTests", dependencies: ["ValidateStage", "ExecStage", "UploadStage", "IndexStage", "NotifyStage", "Index",
                                                     "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "IndexTests", dependencies: ["Index", "SQLite", "Postgres", "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "PhotomemoCore"]),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "SQL", "EventLoop", "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Stores", "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "CompressTests", dependencies: ["CompressStage", "PhotomemoCore", "TestSupport", "CVips"]),
        .testTarget(name: "NotifyTests", dependencies: ["Notify", "PhotomemoCore", "TestSupport"]),
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime", "ControlProtocol", "PhotomemoCore", "EventLoop", "Journal", "Index", "Stores"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Journal", "Index", "SQLite", "Postgres", "PhotomemoCore", "TestSupport", "CompressStage", "photomemo"],
                    exclude: ["Fixtures"]),
    ]
)
