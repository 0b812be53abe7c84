import EventLoop

/// Asset replies on a connection: chunks are read one at a time, streams taking turns,
/// and only while the connection's unsent bytes are under `streamWatermark`.
extension ControlConnection {
    /// Takes over a stream whose reply is being sent now: its chunk lines follow, and it
    /// counts as a request in flight until its end line.
    func adoptStream(_ stream: AssetStream) {
        guard !pipe.isClosed, !dropped else { return }
        inFlight += 1
        streams.append(stream)
        pumpStreams()
    }

    /// Starts the next chunk read (streams take turns) while the unsent bytes, counting
    /// the chunks being read, are under the watermark.
    func pumpStreams() {
        while !pipe.isClosed, !dropped, !streams.isEmpty {
            let reading = streams.filter(\.isReading).count
            guard pipe.pendingWriteBytes + reading * AssetStream.lineBytes < Self.streamWatermark,
                  let stream = nextIdleStream() else { return }
            stream.readNext { [weak self] line, finished in
                guard let self, !self.pipe.isClosed, !self.dropped else { return }
                self.pipe.write(line)
                if finished {
                    self.streams.removeAll { $0 === stream }
                    self.inFlight -= 1
                    self.takeRequests()
                }
                self.pumpStreams()
            }
        }
    }

    private func nextIdleStream() -> AssetStream? {
        for k in 0..<streams.count {
            let s = streams[(nextStream + k) % streams.count]
            if !s.isReading {
                nextStream = (nextStream + k + 1) % streams.count
                return s
            }
        }
        return nil
    }
}
