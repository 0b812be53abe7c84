import Foundation
import TestSupport
import Testing

/// Each plugin folder's README is what `photomemo stages --markdown NAME` prints from the
/// stage's declarations: a changed option, default or declaration with a stale README
/// fails here (regenerate: `photomemo stages --markdown NAME > Plugins/Name/README.md`).
@Suite struct StageReadmeTests {
    @Test func everyPluginReadmeIsTheGeneratedOne() throws {
        let plugins = packageRoot.appendingPathComponent("Plugins").path
        let folders = try FileManager.default.contentsOfDirectory(atPath: plugins).sorted()
        #expect(folders.count >= 6)
        for folder in folders {
            let name = folder.lowercased()
            let (status, out, err) = try DaemonHarness.run(["stages", "--markdown", name])
            #expect(status == 0, "\(folder): \(err)")
            let readme = (try? String(contentsOfFile: "\(plugins)/\(folder)/README.md", encoding: .utf8)) ?? "(missing)"
            #expect(readme == out, "Plugins/\(folder)/README.md is stale: run photomemo stages --markdown \(name) > Plugins/\(folder)/README.md")
        }
    }
}
