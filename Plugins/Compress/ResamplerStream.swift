extension Resampler {
    /// The resampler fed one input row at a time (HEIF tiles arrive a tile row at a time):
    /// each row is converted to floats into the ring, and every output row whose window is
    /// complete is written at once. Input rows must come in order, all `height` of them.
    final class Stream {
        let rows: Taps, columns: Taps
        let bands: Int, rowBytes: Int, outRowBytes: Int, outHeight: Int, stride: Int, span: Int, taps: Int
        let ring: UnsafeMutablePointer<Float>, window: UnsafeMutablePointer<UnsafePointer<Float>>
        let line: UnsafeMutablePointer<Float>, outLine: UnsafeMutablePointer<Float>, outBytes: UnsafeMutablePointer<UInt8>
        let lanes: [SIMD4<Float>], offsets: [Int32]
        let dst: UnsafeMutablePointer<UInt8>
        /// Where each output row's pixels go in `dst` (`Orientation.placement`, in bytes).
        let placement: (first: Int, dx: Int, dy: Int)
        private(set) var converted = 0, written = 0

        /// `outWidth` x `outHeight` is the output as stored; with an `orientation` other than 1
        /// it lands in `dst` turned upright (`Orientation.uprightSize`).
        init(width: Int, height: Int, bands: Int, into dst: UnsafeMutablePointer<UInt8>, outWidth: Int, outHeight: Int,
             orientation: Int = 1) {
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
            outBytes = .allocate(capacity: outRowBytes)
            ring.initialize(repeating: 0, count: span * stride)
            outLine.initialize(repeating: 0, count: outRowBytes + 4)
            // 1 to 4 bands: a pixel is 4 float lanes; those past its bands are the next pixel's,
            // overwritten when that pixel is stored (the outputs are stored left to right).
            lanes = columns.lanes
            offsets = columns.start.map { $0 * Int32(bands * 4) }
            let p = Orientation.placement(orientation: orientation, width: outWidth, height: outHeight)
            placement = (p.first * bands, p.dx * bands, p.dy * bands)
        }

        deinit { ring.deallocate(); window.deallocate(); line.deallocate(); outLine.deallocate(); outBytes.deallocate() }

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
            if placement.dx == bands {
                bytes(into: dst + placement.first + y * placement.dy)
            } else {
                bytes(into: outBytes)
                place(row: y)
            }
        }

        /// `outLine` as bytes, packed (a loop LLVM vectorises).
        private func bytes(into out: UnsafeMutablePointer<UInt8>) {
            for x in 0..<outRowBytes { out[x] = byte(outLine[x]) }
        }

        /// A turned output row (in `outBytes`): each pixel to its upright place (a column, for 5...8).
        private func place(row y: Int) {
            var out = dst + placement.first + y * placement.dy, s = UnsafePointer(outBytes)
            let step = placement.dx, width = outRowBytes / bands
            if bands == 3 {
                for _ in 0..<width {
                    out[0] = s[0]; out[1] = s[1]; out[2] = s[2]
                    out += step
                    s += 3
                }
            } else {
                for _ in 0..<width {
                    for b in 0..<bands { out[b] = s[b] }
                    out += step
                    s += bands
                }
            }
        }
    }
}
