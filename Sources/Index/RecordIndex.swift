import StageKit

/// The record index as the rest of the daemon sees it, whatever engine holds it: writes,
/// queries, the change feed, subscriptions and their outbox, and the asset references
/// the collector needs. `RecordStore` is it, on SQLite or on PostgreSQL shared by several
/// daemons. Every call blocks: run them off the loop thread.
public protocol RecordIndex: AnyObject, Sendable {
    // MARK: writing (each call one transaction with its change; an update's and a delete's
    // outbox rows too, while `apply`'s are written by `fanOutPending`, outside the write)

    /// Creates the job's record, or returns it when this job already did (idempotent on
    /// the job key); `op` is "create", "update" or "none".
    func apply(_ input: RecordInput, now: Double) throws -> (record: Record, op: String)
    /// Many inputs in one transaction; throws if any one does (the caller splits).
    func apply(batch inputs: [RecordInput], now: Double) throws -> [(record: Record, op: String)]
    func update(_ id: String, memo: String?, fields: [String: JSONValue], acl: ACL?, ifTag: String?, viewer: Viewer,
                now: Double) throws -> Record
    /// Deletes a record and those that refer to it with `deleteSelf`: into the trash or at once.
    func delete(_ id: String, viewer: Viewer, mode: DeleteMode, now: Double) throws -> Deletion
    /// Brings a trashed record back (and those its delete trashed with it) with `create` changes.
    func restore(_ id: String, viewer: Viewer, now: Double) throws -> [Record]
    /// Purges up to `limit` trashed records deleted at or before `deletedBefore`.
    func purgeTrash(deletedBefore: Double, limit: Int, now: Double) throws -> (purged: Int, released: [String])

    // MARK: reading

    func get(_ id: String, viewer: Viewer) throws -> Record?
    /// A record in the trash the viewer could read.
    func getTrashed(_ id: String, viewer: Viewer) throws -> TrashedRecord?
    /// The trash as the viewer may see it, the latest deleted first.
    func trashList(viewer: Viewer, limit: Int, cursor: String?) throws -> (records: [TrashedRecord], cursor: String?)
    /// Records in the trash: `owner`'s, or everyone's for nil (what `status` shows).
    func trashCount(owner: String?) throws -> Int
    /// `owner`'s records and the bytes their assets hold (what a quota counts).
    func usage(owner: String) throws -> (records: Int, bytes: Int64)
    /// Throws `RecordWriteError.badReference` when a reference in `fields` names a record
    /// `viewer` may not read, or none (an early answer for `enqueue`; writes check again).
    func checkReferences(in fields: [String: JSONValue], viewer: Viewer) throws
    /// The names of the record's reference fields whose target the viewer cannot read.
    func danglingReferences(of record: Record, viewer: Viewer) throws -> [String]
    /// Keyset-paged: the cursor stays right while records are added or removed.
    /// With `maxBytes`, the page stops before the record whose stored text would take it
    /// past that (keeping at least one), with a cursor for the rest: sizes are read first,
    /// so a page of huge memos is never held whole (the socket's replies are bounded).
    func query(_ predicate: RecordPredicate, type: String?, sort: [SortKey], limit: Int, cursor: String?,
               viewer: Viewer, maxBytes: Int?) throws -> RecordPage
    /// Changes after `since`, oldest first, that the viewer could read when they happened;
    /// `maxBytes` bounds the page as for `query`.
    func changes(since: Int64, limit: Int, viewer: Viewer, maxBytes: Int?) throws -> [RecordChange]

    // MARK: subscriptions and the outbox

    /// Refuses (`PredicateSyntaxError`) a predicate this engine cannot evaluate.
    func subscribe(_ s: Subscription, now: Double) throws -> Subscription
    func unsubscribe(_ id: String, viewer: Viewer) throws
    func subscription(_ id: String) throws -> Subscription?
    func subscriptions(viewer: Viewer) throws -> [JSONValue]
    /// Fans changes not yet fanned out into deliveries; returns how many were made.
    func fanOutPending(now: Double) throws -> Int
    /// Claims the next due delivery of each webhook/exec subscription, in change order,
    /// for `claimant` until `until` (daemons sharing a database never send one twice at once).
    func claimDueDeliveries(limit: Int, claimant: String, until: Double, now: Double) throws -> [OutboxDelivery]
    /// Gives up claims: `ids` claimed but not sent, or (nil) all of `claimant`'s, at start.
    func releaseDeliveryClaims(of claimant: String, ids: [Int64]?) throws
    func finishDelivery(_ id: Int64, delivered: Bool, error: String?, retryAt: Double?, now: Double) throws
    /// Makes a subscription's pending deliveries wait until at least `until` (its sink hangs).
    func holdDeliveries(subscription id: String, until: Double) throws
    func retryFailedDeliveries(subscription id: String, viewer: Viewer, now: Double) throws -> Int
    /// Deletes up to `limit` deliveries delivered before `deliveredBefore` or failed before
    /// `failedBefore` (retention); returns how many.
    func pruneDeliveries(deliveredBefore: Double, failedBefore: Double, limit: Int) throws -> Int
    /// A socket follower's events after change `since`.
    func socketEvents(subscription s: Subscription, since: Int64) throws -> [JSONValue]

    // MARK: assets released by updates and deletes

    func releasedAssets(limit: Int) throws -> [String]
    func forgetReleased(_ key: String) throws
    func isReferenced(_ key: String) throws -> Bool

    // MARK: backup and verify

    func assetPage(after: String, limit: Int) throws -> [(id: String, assets: JSONValue)]
    func isReleased(_ key: String) throws -> Bool
}

extension RecordIndex {
    public func apply(_ input: RecordInput) throws -> (record: Record, op: String) { try apply(input, now: unixNow()) }
    public func apply(batch inputs: [RecordInput]) throws -> [(record: Record, op: String)] { try apply(batch: inputs, now: unixNow()) }
    public func update(_ id: String, memo: String?, fields: [String: JSONValue], acl: ACL? = nil, ifTag: String?,
                       viewer: Viewer) throws -> Record {
        try update(id, memo: memo, fields: fields, acl: acl, ifTag: ifTag, viewer: viewer, now: unixNow())
    }
    public func delete(_ id: String, viewer: Viewer, mode: DeleteMode = .immediate) throws -> Deletion {
        try delete(id, viewer: viewer, mode: mode, now: unixNow())
    }
    public func query(_ predicate: RecordPredicate, type: String?, sort: [SortKey], limit: Int, cursor: String?,
                      viewer: Viewer) throws -> RecordPage {
        try query(predicate, type: type, sort: sort, limit: limit, cursor: cursor, viewer: viewer, maxBytes: nil)
    }
    public func changes(since: Int64, limit: Int, viewer: Viewer) throws -> [RecordChange] {
        try changes(since: since, limit: limit, viewer: viewer, maxBytes: nil)
    }
    /// Every match in creation order, up to 100.
    public func query(_ predicate: RecordPredicate, viewer: Viewer) throws -> RecordPage {
        try query(predicate, type: nil, sort: [], limit: 100, cursor: nil, viewer: viewer)
    }
    public func subscribe(_ s: Subscription) throws -> Subscription { try subscribe(s, now: unixNow()) }
    public func fanOutPending() throws -> Int { try fanOutPending(now: unixNow()) }
    public func finishDelivery(_ id: Int64, delivered: Bool, error: String?, retryAt: Double?) throws {
        try finishDelivery(id, delivered: delivered, error: error, retryAt: retryAt, now: unixNow())
    }
    public func retryFailedDeliveries(subscription id: String, viewer: Viewer) throws -> Int {
        try retryFailedDeliveries(subscription: id, viewer: viewer, now: unixNow())
    }
}
