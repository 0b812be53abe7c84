import Foundation

extension E2E {
    /// An SVG bar chart of CPU ms per photo by stage: "before" is main as of 2026-12-01
    /// (commit 2c8a14f), measured with this bench at the start of issue #16 and recorded
    /// here (or run live with `--before`); "after" is this run. A black tick on each bar
    /// marks the djpeg floor measured beside it: load moves both, the ratio holds.
    enum Chart {
        /// 2026-12-01 10:14 UTC, 64 photos, best of 2, load average 3.0 (djpeg 62.7 ms in the same run).
        static let before: [String: Double] = ["validate": 9.7, "compress": 104.6, "upload": 13.6, "index": 0.9, "notify": 0.3, "other": 13.6]
        static let beforeLabel = "before (main 2c8a14f, recorded)"
        static let beforeFloor: Double? = 62.7

        static let colours = ["validate": "#4e79a7", "compress": "#f28e2b", "upload": "#e15759", "index": "#76b7b2",
                              "notify": "#59a14f", "other": "#bab0ac"]

        static func write(before: ([String: Double], String, Double?), after: ([String: Double], Double?), to path: String) throws {
            let rows = [(before.1, before.0, before.2), ("after (this run)", after.0, after.1)]
            let maxTotal = max(1, rows.map { $0.1.values.reduce(0, +) }.max() ?? 1)
            let width = 860.0, left = 250.0, barH = 34.0, scale = (width - left - 140) / maxTotal
            var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="200" font-family="sans-serif" font-size="13">
            <rect width="100%" height="100%" fill="white"/>
            <text x="10" y="22" font-size="15">photomemo: CPU ms per 12 MP photo by stage, end to end</text>

            """
            for (i, (label, stages, floor)) in rows.enumerated() {
                let y = 45 + Double(i) * (barH + 16)
                svg += "<text x=\"10\" y=\"\(y + barH / 2 + 5)\">\(label)</text>\n"
                var x = left
                for s in E2E.stageOrder {
                    let w = (stages[s] ?? 0) * scale
                    guard w > 0 else { continue }
                    svg += String(format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"%@\"><title>%@ %.1f ms</title></rect>\n",
                                  x, y, w, barH, colours[s]!, s, stages[s]!)
                    x += w
                }
                let total = stages.values.reduce(0, +)
                if let floor {
                    svg += String(format: "<rect x=\"%.1f\" y=\"%.1f\" width=\"2\" height=\"%.0f\" fill=\"black\"><title>djpeg -scale 1/4: %.1f ms</title></rect>\n",
                                  left + floor * scale, y - 4, barH + 8, floor)
                }
                let ratio = floor.map { String(format: " (%.2fx djpeg)", total / $0) } ?? ""
                svg += String(format: "<text x=\"%.1f\" y=\"%.1f\">%.0f ms%@</text>\n", x + 6, y + barH / 2 + 5, total, ratio)
            }
            for (i, s) in E2E.stageOrder.enumerated() {
                let x = 10 + Double(i) * 120
                svg += "<rect x=\"\(x)\" y=\"160\" width=\"14\" height=\"14\" fill=\"\(colours[s]!)\"/><text x=\"\(x + 20)\" y=\"172\">\(s)</text>\n"
            }
            svg += "</svg>\n"
            try svg.write(toFile: path, atomically: true, encoding: .utf8)
        }
    }
}
