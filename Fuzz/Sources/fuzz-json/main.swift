import FuzzDriver
import Foundation
import StageKit

// JSONValue.parse on arbitrary bytes: it either refuses with a bad_json error or returns a
// value that writes back (jsonString) to text it parses to the same value again, and that
// text is stable, since the journal and the job lines store JSON this way and read it back.
runFuzzer { bytes in
    let value: JSONValue
    do {
        value = try JSONValue.parse(Data(bytes))
    } catch let e as PhotomemoError {
        guard e.code == .badJSON else { bug("refused with \(e.code), not bad_json: \(e.message)") }
        return
    } catch {
        bug("refused with a foreign error: \(error)")
    }
    let written = value.jsonString
    let again: JSONValue
    do { again = try JSONValue.parse(written) } catch { bug("its own output does not parse: \(written) (\(error))") }
    guard again == value else { bug("round trip changed the value: \(value) -> \(again)") }
    guard again.jsonString == written else { bug("output is not stable: \(written) -> \(again.jsonString)") }
}
