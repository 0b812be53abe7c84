extension Resampler {
    /// The resampler fed one input row at a time (HEIF tiles arrive a tile row at a time):
    /// each row is converted to floats into the ring, and every output row whose window is
    /// complete is written at once. Input rows must come in order, all `height` of them.
    final class Stream {
        let rows: Taps, columns: Taps
        let bands: Int, rowBytes: Int, outRowBytes: Int, outHeight: Int, stride: Int, span: Int, taps: Int
        let ring: UnsafeMutablePointer<Float>, window: UnsafeMutablePointer<UnsafePointer<Float>>
        let line: UnsafeMutablePointer<Float>, outLine: UnsafeMutablePointer<Float>
        let lanes: [SIMD4<Float>], offsets: [Int32]
        let dst: UnsafeMutablePointer<UInt8>
        private(set) var converted = 0, written = 0

        init(width: Int, height: Int, bands: Int, into dst: UnsafeMutablePointer<UInt8>, outWidth: Int, outHeight: Int) {
            rows = Taps(input: height, output: outHeight)
            columns = Taps(input: width, output: outWidth)
            (self.bands, self.dst, self.outHeight) = (bands, dst, outHeight)
            (rowBytes, outRowBytes, taps, span) = (width * bands, outWidth * bands, columns.padded, rows.span)
            // Whole 32-float chunks (no tail in the vertical pass), with room for the zero-weighted
            // taps past the last pixel and the lanes past a pixel's bands. Padding stays 0 (finite).
            stride = (rowBytes + taps * bands + 4 + 31) & ~31
            ring = .allocate(capacity: span * stride)
            window = .allocate(capacity: span)
            line = .allocate(capacity: stride)
            outLine = .allocate(capacity: outRowBytes + 4)
            ring.initialize(repeating: 0, count: span * stride)
            outLine.initialize(repeating: 0, count: outRowBytes + 4)
            // 1 to 4 bands: a pixel is 4 float lanes; those past its bands are the next pixel's,
            // overwritten when that pixel is stored (the outputs are stored left to right).
            lanes = columns.lanes
            offsets = columns.start.map { $0 * Int32(bands * 4) }
        }

        deinit { ring.deallocate(); window.deallocate(); line.deallocate(); outLine.deallocate() }

        /// The next input row (`width` x `bands` bytes).
        func push(_ row: UnsafePointer<UInt8>) {
            floats(row, count: rowBytes, into: ring + (converted % span) * stride)
            converted += 1
            while written < outHeight, Int(rows.start[written] + rows.lengths[written]) <= converted {
                emit(written)
                written += 1
            }
        }

        private func emit(_ y: Int) {
            let first = Int(rows.start[y]), n = Int(rows.lengths[y])
            for k in 0..<n { window[k] = UnsafePointer(ring + ((first + k) % span) * stride) }
            rows.weights.withUnsafeBufferPointer {
                vertical(window, count: n, weights: $0.baseAddress! + y * rows.width, stride: stride, into: line)
            }
            lanes.withUnsafeBufferPointer {
                horizontal4Lanes(line, stride: bands, offsets: offsets, taps: taps, lanes: $0.baseAddress!, into: outLine)
            }
            let out = dst + y * outRowBytes
            for x in 0..<outRowBytes { out[x] = byte(outLine[x]) }
        }
    }
}
