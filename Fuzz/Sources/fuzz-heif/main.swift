import FuzzDriver
import HEIF

// Compress's HEIF box parser on arbitrary bytes (hostile uploads): it refuses with a
// Problem or a Limit, or describes an image whose every tile extent lies inside the buffer. Any trap
// (out-of-bounds read, overflow) or sanitizer report is a bug.
runFuzzer { bytes in
    // validate's and compress's check first (the SPS read, the grid's reach): a Limit or nothing.
    do { try HEIFFile.checkLimits(bytes) } catch is HEIFFile.Limit {} catch { bug("checkLimits threw a foreign error: \(error)") }
    let file: HEIFFile
    do {
        file = try HEIFFile.parse(bytes)
    } catch is HEIFFile.Problem {
        return
    } catch is HEIFFile.Limit {
        return  // more items, extents or bytes than anyone parses: refused too
    } catch {
        bug("refused with a foreign error: \(error)")
    }
    guard file.width > 0, file.height > 0, file.tiles.count == file.rows * file.columns else {
        bug("accepted \(file.width)x\(file.height) with \(file.tiles.count) tiles for \(file.columns)x\(file.rows)")
    }
    let ranges: [Range<Int>] = Array(file.tiles.joined()) + file.hevc.parameterSets + (file.colour.icc.map { [$0] } ?? [])
    for r in ranges where r.lowerBound < 0 || r.upperBound > bytes.count {
        bug("bytes \(r) are outside the \(bytes.count)-byte input")
    }
}
