import FuzzDriver
import ValidateStage

// The validate stage's header probe on arbitrary bytes (hostile uploads): it refuses with
// a Problem, or names the format its magic bytes say with a non-empty size. Any trap
// (out-of-bounds read, overflow) or sanitizer report is a bug.
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
    guard ImageProbe.sniff(bytes) == probe.format else { bug("probed \(probe.format) but sniff says \(String(describing: ImageProbe.sniff(bytes)))") }
    _ = probe.pixels
}
