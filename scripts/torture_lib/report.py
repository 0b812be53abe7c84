"""Matches the torture run's inputs to the records, jobs, change feed and webhook
deliveries, and says what was lost or duplicated."""
from collections import Counter, defaultdict


def check(inputs, records, failed_jobs, changes, deliveries, subscriptions, followed):
    by_sha, by_n = defaultdict(list), defaultdict(list)
    for r in records:
        sha = ((r.get("assets") or {}).get("original") or {}).get("sha256")
        if sha:
            by_sha[sha].append(r["id"])
        n = (r.get("fields") or {}).get("n")
        if n is not None:
            by_n[n].append(r["id"])
    lost, duplicated, misjoined = [], [], []
    for name, sha in inputs.photos.items():
        ids = by_sha.get(sha, [])
        if not ids:
            lost.append("photo %s" % name)
        elif len(ids) > 1:
            duplicated.append("photo %s: records %s" % (name, " ".join(ids)))
    for n, photo in inputs.memos.items():
        ids = by_n.get(n, [])
        if not ids:
            lost.append("memo n=%d%s" % (n, " (photo %s)" % photo if photo else ""))
        elif len(ids) > 1:
            duplicated.append("memo n=%d: records %s" % (n, " ".join(ids)))
        elif photo and by_sha.get(inputs.photos[photo], [None])[0] != ids[0]:
            misjoined.append("memo n=%d and photo %s are different records" % (n, photo))

    creates = [c for c in changes if c.get("op") == "create"]
    record_ids = {r["id"] for r in records}
    created_twice = [rid for rid, k in Counter(c["record_id"] for c in creates).items() if k > 1]
    # Every create change must reach the webhook subscribed to its record's type.
    delivered = defaultdict(set)  # seq -> subscriptions it was delivered for
    bad_signatures = 0
    for event_id, seq, _record, ok in deliveries:
        bad_signatures += 0 if ok else 1
        if event_id and seq is not None:
            delivered[seq].add(event_id.rsplit("-", 1)[0])
    missing = []
    for c in creates:
        sub = subscriptions.get(c.get("type"))
        if sub is None or c["record_id"] not in record_ids:
            continue  # a type nobody subscribed to, or a record deleted since
        if sub not in delivered.get(c["seq"], set()):
            missing.append("change %d (create %s %s)" % (c["seq"], c.get("type"), c["record_id"]))
    # Every create change must reach the socket follower of its type (across reconnects).
    unfollowed = ["change %d (create %s %s)" % (c["seq"], c.get("type"), c["record_id"]) for c in creates
                  if c.get("type") in followed and c["seq"] not in followed[c["type"]]]
    redelivered = sum(k - 1 for k in Counter(e for e, _, _, _ in deliveries).values() if k > 1)
    return {
        "lost": lost, "duplicated": duplicated, "misjoined": misjoined, "created_twice": created_twice,
        "failed": ["job %s (%s, %s): %s" % (j.get("id"), j.get("photo") or "no photo", j.get("stage") or "-", j.get("error"))
                   for j in failed_jobs],
        "missing": missing, "unfollowed": unfollowed, "creates": len(creates), "deliveries": len(deliveries),
        "redelivered": redelivered, "bad_signatures": bad_signatures,
    }


def print_report(result, n_inputs, kills, seconds, records):
    def section(title, items):
        if items:
            print("%s (%d):" % (title, len(items)))
            for i in items[:50]:
                print("  " + i)
            if len(items) > 50:
                print("  ... and %d more" % (len(items) - 50))
    section("lost inputs", result["lost"])
    section("duplicated inputs", result["duplicated"])
    section("memos not joined to their photo", result["misjoined"])
    section("records created twice in the change feed", result["created_twice"])
    section("failed jobs", result["failed"])
    section("create changes never delivered", result["missing"])
    section("create changes the socket followers never saw", result["unfollowed"])
    section("files left hidden in the inbox by a release", result.get("hidden", []))
    print("missing notifications: %d webhook, %d socket follower" % (len(result["missing"]), len(result["unfollowed"])))
    print("records %d, create changes %d, webhook deliveries %d (%d repeats of an event id, %d bad signatures), %.0f s"
          % (records, result["creates"], result["deliveries"], result["redelivered"], result["bad_signatures"], seconds))
    print("torture: %d inputs, %d kills: %d lost, %d duplicated records, %d missing notifications"
          % (n_inputs, kills, len(result["lost"]), len(result["duplicated"]), len(result["missing"]) + len(result["unfollowed"])))
    bad = result["lost"] or result["duplicated"] or result["missing"] or result["unfollowed"] or result["misjoined"] \
        or result["created_twice"] or result["bad_signatures"] or result.get("hidden")
    return 1 if bad else 0
