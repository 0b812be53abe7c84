import EventLoop
import StageKit

/// SIGHUP and `photomemo reload`: reads the job definition and builds its stages off the
/// loop — a slow disk, or a stage opening its store or database, must not stall the
/// socket, intake and running jobs' completions — then checks and applies it on the loop.
/// One read at a time; a reload asked for while one runs gets a fresh read after it, so
/// it sees the file as it was when asked.
final class DefinitionReloader {
    typealias Reply = (Result<JobDefinition, PhotomemoError>) -> Void

    private let loop: EventLoop
    private let load: @Sendable () throws -> JobDefinition
    private let apply: (Result<JobDefinition, any Error>) -> Result<JobDefinition, PhotomemoError>
    private var running = false
    private var waiting: [Reply] = []

    /// `load` runs on the work pool; `apply`, on the loop, checks what it loaded (or its
    /// error) and swaps it in, answering what the callers are told.
    init(loop: EventLoop, load: @escaping @Sendable () throws -> JobDefinition,
         apply: @escaping (Result<JobDefinition, any Error>) -> Result<JobDefinition, PhotomemoError>) {
        self.loop = loop
        self.load = load
        self.apply = apply
    }

    func reload(_ reply: @escaping Reply = { _ in }) {
        waiting.append(reply)
        if !running { readNext() }
    }

    private func readNext() {
        let replies = waiting
        waiting = []
        running = true
        let load = self.load
        loop.submit({ Result { try load() } }) { [self] loaded in
            let result = apply(loaded)
            running = false
            for reply in replies { reply(result) }
            if !waiting.isEmpty { readNext() }
        }
    }
}
