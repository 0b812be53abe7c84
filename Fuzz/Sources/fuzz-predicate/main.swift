import Foundation
import FuzzDriver
import Index
import StageKit

// The query path as `photomemo query` drives it: PredicateParser → PredicateCompiler →
// SQL run by RecordStore.query on a real SQLite index holding records with every field
// kind. Input: up to four lines, the predicate, the sort keys, the record type and a
// cursor. A bad predicate or sort must be a PredicateSyntaxError (the client's
// `bad_request`; too many sort keys are a bad_request of their own), a bad cursor a bad_request; any other error would reach the client as
// `internal` and is a bug, as is a trap.

let store = SampleIndex.open()
let viewers: [Viewer] = [.admin, .user("alice")]

/// One query, then the next page with the cursor it returned, as a client pages.
func query(_ predicate: RecordPredicate, type: String?, sort: [SortKey], cursor: String?, viewer: Viewer) {
    var cursor = cursor
    for _ in 0..<2 {
        do {
            let page = try store.query(predicate, type: type, sort: sort, limit: 2, cursor: cursor, viewer: viewer)
            guard page.records.count <= 2 else { bug("limit 2 returned \(page.records.count) records") }
            guard let next = page.cursor else { return }
            cursor = next
        } catch is PredicateSyntaxError {
            return
        } catch let e as PhotomemoError where e.code == .badRequest && cursor != nil {
            return  // the fuzzed cursor is not one of this query's
        } catch {
            bug("query failed with \(error) (an internal error for the client)")
        }
    }
}

runFuzzer { bytes in
    let parts = text(bytes).split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let predicateText = parts[0]
    let sortText = parts.count > 1 ? parts[1] : ""
    let type = parts.count > 2 && !parts[2].isEmpty ? parts[2] : nil
    let cursor = parts.count > 3 ? parts[3] : nil
    let predicate: RecordPredicate, sort: [SortKey]
    do {
        predicate = try PredicateParser.parse(predicateText)
        sort = try SortKey.parse(sortText)
    } catch is PredicateSyntaxError {
        return
    } catch let e as PhotomemoError where e.code == .badRequest {
        return  // more sort keys than SortKey.maxKeys: the client's bad_request too
    } catch {
        bug("parsing refused with \(error), not a PredicateSyntaxError or a bad_request")
    }
    for viewer in viewers {
        query(predicate, type: type, sort: sort, cursor: cursor, viewer: viewer)
    }
}
