import Foundation
import StageKit

/// What `serve --http` answers, from the same sources as `status` and `metrics`.
extension StatusHandlers {
    var httpRoutes: [String: HealthHTTPServer.Route] {
        ["/metrics": { [unowned self] done in self.metricsAnswer(done) },
         "/health": { [unowned self] done in self.healthAnswer(done) }]
    }

    /// The text of `photomemo metrics`, rendered by the same code off the loop.
    private func metricsAnswer(_ done: @escaping (HealthHTTPServer.Answer) -> Void) {
        metrics { result in
            switch result {
            case .success(let r): done(.init(status: 200, body: r["text"]?.stringValue ?? "", contentType: "text/plain; version=0.0.4; charset=utf-8"))
            case .failure(let e): done(.init(status: 503, body: "metrics cannot be read: \(e.code.rawValue)\n"))
            }
        }
    }

    /// 200 when the journal reads and writes and every dependency `status` shows is up;
    /// else 503 naming what is down. Names and times only: the engine's own words are
    /// for admins (`status`), and anyone who reaches the address reads this.
    private func healthAnswer(_ done: @escaping (HealthHTTPServer.Answer) -> Void) {
        let loopState = loopSnapshot(), journal = self.journal
        loop.submit({ () -> [String] in
            let snapshot = loopState.seeingTheDisk()
            var down = snapshot.dependencies.filter { !$0.value }.keys.sorted().map { name -> String in
                if name == "journal", let f = snapshot.journalWriteFailure { return "journal: its writes fail since \(isoTimestamp(f.since))" }
                return "\(name): down"
            }
            if (try? journal.counts()) == nil, !down.contains(where: { $0.hasPrefix("journal") }) {
                down.insert("journal: cannot be read", at: 0)
            }
            return down
        }, then: { down in
            done(down.isEmpty ? .init(status: 200, body: "ok\n") : .init(status: 503, body: down.joined(separator: "\n") + "\n"))
        })
    }
}
