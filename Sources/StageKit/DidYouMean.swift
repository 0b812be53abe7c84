/// The closest candidate within edit distance 2, for "did you mean".
public func didYouMean(_ word: String, _ candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        var prev = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var cur = [i + 1]
            for (j, cb) in b.enumerated() {
                cur.append(min(prev[j + 1] + 1, cur[j] + 1, prev[j] + (ca == cb ? 0 : 1)))
            }
            prev = cur
        }
        return prev[b.count]
    }
    let scored = candidates.map { ($0, distance(Array(word), Array($0))) }.filter { $0.1 <= 2 }
    return scored.min { $0.1 < $1.1 }?.0
}
