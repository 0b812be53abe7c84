import Foundation

extension ClusterReport {
    /// The sorted latencies as a line (x: fraction of samples, y: ms), p50 and the target marked.
    func chart() -> String {
        let w = 600.0, h = 300.0, pad = 40.0
        let top = Swift.max(6, (r.latency.last ?? 6) * 1.05)
        func x(_ f: Double) -> Double { pad + f * (w - 2 * pad) }
        func y(_ ms: Double) -> Double { h - pad - ms / top * (h - 2 * pad) }
        let points = r.latency.enumerated().map { String(format: "%.1f,%.1f", x(Double($0.offset) / Double(Swift.max(1, r.latency.count - 1))), y($0.element)) }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(w))" height="\(Int(h))" font-family="sans-serif" font-size="12">
            <rect width="100%" height="100%" fill="white"/>
            <text x="\(pad)" y="20">add → claim via NOTIFY, \(r.latency.count) samples (ms, sorted)</text>
            <line x1="\(pad)" y1="\(h - pad)" x2="\(w - pad)" y2="\(h - pad)" stroke="black"/>
            <line x1="\(pad)" y1="\(pad)" x2="\(pad)" y2="\(h - pad)" stroke="black"/>
            <line x1="\(pad)" y1="\(y(5))" x2="\(w - pad)" y2="\(y(5))" stroke="red" stroke-dasharray="4"/>
            <text x="\(w - pad - 80)" y="\(y(5) - 4)" fill="red">target 5 ms</text>
            <text x="\(x(0.5) + 4)" y="\(h - pad + 16)">p50 \(String(format: "%.2f", pct(0.5))) ms</text>
            <text x="4" y="\(y(top) + 12)">\(String(format: "%.0f", top))</text><text x="20" y="\(h - pad)">0</text>
            <polyline fill="none" stroke="steelblue" stroke-width="2" points="\(points.joined(separator: " "))"/>
            </svg>

            """
    }
}
