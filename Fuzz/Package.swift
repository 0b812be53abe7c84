// swift-tools-version:6.0
import Foundation
import PackageDescription

// libFuzzer targets for photomemo's parsers (see docs/testing.md, "Fuzzing and sanitizers").
// Build with scripts/fuzz, which passes -sanitize=fuzzer,address to every module, the
// main package's too, so coverage reaches the code under test.
//
// A path dependency is named after its folder ("photomemo", or a worktree's name), so the
// name is read from where this file is rather than spelled out.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let photomemo = root.lastPathComponent.lowercased()

func fuzzer(_ name: String, _ products: [String]) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzDriver"] + products.map { .product(name: $0, package: photomemo) })
}

let package = Package(
    name: "photomemo-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "..")],
    targets: [
        .target(name: "FuzzDriver"),
        fuzzer("fuzz-json", ["StageKit"]),
        fuzzer("fuzz-memojob", ["StageKit"]),
        fuzzer("fuzz-xmp", ["PhotomemoCore", "StageKit"]),
        fuzzer("fuzz-request", ["Runtime", "ControlProtocol", "Index", "StageKit"]),
        fuzzer("fuzz-predicate", ["Index", "StageKit"]),
        fuzzer("fuzz-probe", ["ValidateStage"]),
        fuzzer("fuzz-heif", ["HEIF"]),
        fuzzer("fuzz-compress", ["CompressStage", "PhotomemoCore", "StageKit"]),
    ]
)
