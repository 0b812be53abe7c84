import FuzzDriver
import ValidateStage

// The validate stage's header probe on arbitrary bytes (hostile uploads): it refuses with
// a Problem, or names the format its magic bytes say (in a HEIF container, its primary
// image's coding) with a non-empty size. Any trap (out-of-bounds read, overflow) or
// sanitizer report is a bug.
runFuzzer { bytes in
    let probe: ImageProbe
    do {
        probe = try ImageProbe.probe(bytes)
    } catch is ImageProbe.Problem {
        return
    } catch {
        bug("refused with a foreign error: \(error)")
    }
    guard probe.width > 0, probe.height > 0 else { bug("accepted an empty size \(probe.width)x\(probe.height)") }
    // The magic bytes name the format; in a HEIF container the probe names the primary
    // image's coding instead of the brand (an `avis` file of hvc1 items is HEIC).
    let sniffed = ImageProbe.sniff(bytes), heif: Set<ImageProbe.Format> = [.heic, .avif]
    guard sniffed == probe.format || (sniffed.map(heif.contains) == true && heif.contains(probe.format)) else {
        bug("probed \(probe.format) but sniff says \(String(describing: sniffed))")
    }
    _ = probe.pixels
}
