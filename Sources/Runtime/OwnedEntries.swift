/// An inbox entry listed by name and owner: one left alone (`InboxScanner.SkippedEntry`)
/// or a stale file under an ignored name (`InboxScanner.StaleEntry`, whose bytes count
/// against its owner's quota).
protocol OwnedEntry: Sendable, Equatable {
    var owner: String { get }
    var bytes: Int64 { get }
}

/// Inbox entries named up to `namedPerOwner` a user and only counted past that: each named
/// entry costs ~300 bytes, and one user's 200,000 empty `.txt` files held 57 MB.
/// `photomemo inbox` lists at most `StatusHandlers.maxListedSkipped` of a caller's anyway.
///
/// The named ones follow every look at a name (a name removed or taken leaves at once).
/// The count (and bytes) past a user's named ones is what the last whole walk found
/// (`counting`): a look at one name cannot tell whether an entry it never named was
/// counted already.
struct OwnedEntries<Entry: OwnedEntry>: Sendable {
    static var namedPerOwner: Int { 1_000 }

    private(set) var named: [String: Entry] = [:]
    /// How many each owner has in `named`.
    private var namedByOwner: [String: Int] = [:]
    /// Entries past each owner's named ones, and their bytes, as a whole walk counted them.
    private var unnamed: [String: (count: Int, bytes: Int64)] = [:]
    /// Counts entries past an owner's named ones: a whole walk's, which sees each name once
    /// (the watcher takes it over with `counting` off).
    var counting: Bool

    init(counting: Bool = false) { self.counting = counting }

    /// Named and counted entries, of `owner` or of everyone.
    func count(of owner: String? = nil) -> Int {
        guard let owner else { return named.count + unnamed.values.reduce(0) { $0 + $1.count } }
        return namedByOwner[owner, default: 0] + (unnamed[owner]?.count ?? 0)
    }

    /// Each owner's entries and their bytes, named and counted.
    func byOwner() -> [String: (count: Int, bytes: Int64)] {
        var all = unnamed
        for e in named.values {
            all[e.owner, default: (0, 0)].count += 1
            all[e.owner, default: (0, 0)].bytes = all[e.owner, default: (0, 0)].bytes.addingSaturated(e.bytes)
        }
        return all
    }

    subscript(name: String) -> Entry? { named[name] }

    mutating func set(_ name: String, _ entry: Entry) {
        // A new name of an owner the walk counted past their named ones may be one it counted
        // (a file renamed): not named, not counted, until the next whole walk.
        if !counting, named[name] == nil, unnamed[entry.owner] != nil { return }
        if let old = named[name], old.owner == entry.owner {
            named[name] = entry
            return
        }
        remove(name)
        if namedByOwner[entry.owner, default: 0] < Self.namedPerOwner {
            named[name] = entry
            namedByOwner[entry.owner, default: 0] += 1
        } else if counting {
            unnamed[entry.owner, default: (0, 0)].count += 1
            unnamed[entry.owner, default: (0, 0)].bytes = unnamed[entry.owner, default: (0, 0)].bytes.addingSaturated(entry.bytes)
        }
    }

    mutating func remove(_ name: String) {
        guard let old = named.removeValue(forKey: name) else { return }
        namedByOwner[old.owner, default: 1] -= 1
        if namedByOwner[old.owner] == 0 { namedByOwner[old.owner] = nil }
    }

    /// Every named entry `gone` says is not there any more (a folder removed).
    mutating func removeAll(where gone: (String) -> Bool) {
        for name in named.keys where gone(name) { remove(name) }
    }

    mutating func merge(_ entries: [String: Entry]) {
        for (name, entry) in entries { set(name, entry) }
    }
}

typealias SkippedEntries = OwnedEntries<InboxScanner.SkippedEntry>
typealias StaleEntries = OwnedEntries<InboxScanner.StaleEntry>

extension InboxScanner.SkippedEntry: OwnedEntry {
    var bytes: Int64 { 0 }
}

extension InboxScanner.StaleEntry: OwnedEntry {}
