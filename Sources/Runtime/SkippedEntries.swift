/// The inbox entries left alone (`InboxScanner.SkippedEntry`: folders not walked, files that
/// are not photos), named up to `namedPerOwner` a user and only counted past that: each
/// named entry costs ~300 bytes, and one user's 200,000 empty `.txt` files held ~60 MB.
/// `photomemo inbox` lists at most `StatusHandlers.maxListedSkipped` of a caller's anyway.
///
/// The named ones follow every look at a name (a name removed or taken leaves at once).
/// The count past a user's named ones is what the last whole walk found (`counting`): a
/// look at one name cannot tell whether an entry it never named was counted already.
struct SkippedEntries: Sendable {
    static let namedPerOwner = 1_000

    private(set) var named: [String: InboxScanner.SkippedEntry] = [:]
    /// How many each owner has in `named`.
    private var namedByOwner: [String: Int] = [:]
    /// Entries past each owner's named ones, as a whole walk counted them.
    private(set) var unnamed: [String: Int] = [:]
    /// Counts entries past an owner's named ones: a whole walk's, which sees each name once
    /// (the watcher takes it over with `counting` off).
    var counting: Bool

    init(counting: Bool = false) { self.counting = counting }

    /// Named and counted entries, of `owner` or of everyone.
    func count(of owner: String? = nil) -> Int {
        guard let owner else { return named.count + unnamed.values.reduce(0, +) }
        return namedByOwner[owner, default: 0] + unnamed[owner, default: 0]
    }

    subscript(name: String) -> InboxScanner.SkippedEntry? { named[name] }

    mutating func set(_ name: String, _ entry: InboxScanner.SkippedEntry) {
        if let old = named[name], old.owner == entry.owner {
            named[name] = entry
            return
        }
        remove(name)
        if namedByOwner[entry.owner, default: 0] < Self.namedPerOwner {
            named[name] = entry
            namedByOwner[entry.owner, default: 0] += 1
        } else if counting {
            unnamed[entry.owner, default: 0] += 1
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

    mutating func merge(_ entries: [String: InboxScanner.SkippedEntry]) {
        for (name, entry) in entries { set(name, entry) }
    }
}
