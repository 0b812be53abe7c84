import Foundation
import HTTP

/// Where a user's webhook may not point: the daemon's own host and networks a user could
/// not reach from outside (loopback, link-local — cloud metadata at 169.254.169.254 —,
/// private and carrier-NAT ranges, multicast, unspecified). Without this a user could make
/// the daemon POST into services that trust it by address (SSRF). Admins' webhooks, and
/// every webhook with `serve --allow-private-webhooks`, may point anywhere.
public enum WebhookDestination {
    /// Why a user's webhook may not connect to `ip` (dotted IPv4 or IPv6 text), or nil.
    public static func whyRefused(ip: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, ip, &v4) == 1 {
            return kind(v4: withUnsafeBytes(of: &v4) { Array($0) }).map { "\(ip) is \($0) address" }
        }
        guard inet_pton(AF_INET6, ip, &v6) == 1 else { return "\(ip) is not an IP address" }
        return kind(v6: withUnsafeBytes(of: &v6) { Array($0) }).map { "\(ip) is \($0) address" }
    }

    /// The refusal a user's webhook gets, at subscribe time and at delivery.
    public static func refusal(_ url: String, _ why: String) -> String {
        "webhook \(url): \(why); a user's webhook may not point at loopback, link-local or private addresses "
            + "(an admin may allow them: photomemo serve --allow-private-webhooks)"
    }

    /// Why a user's webhook `url` is refused at subscribe, or nil: its host is an address
    /// of a refused kind (in any spelling `inet_aton` takes: `2130706433`, `0x7f.1`) or
    /// `localhost`. Other names are not resolved here — a slow DNS answer would hold a
    /// worker thread per request — but at each delivery, on the address connected to.
    public static func whyRefused(url: String) -> String? {
        guard let host = HTTPRequest.host(of: url)?.lowercased(), !host.isEmpty else { return "\(url) has no host" }
        if host == "localhost" || host.hasSuffix(".localhost") || host == "localhost." { return "\(host) is a loopback name" }
        var v6 = in6_addr(), v4 = in_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return kind(v6: withUnsafeBytes(of: &v6) { Array($0) }).map { "\(host) is \($0) address" } }
        if inet_aton(host, &v4) != 0 { return kind(v4: withUnsafeBytes(of: &v4) { Array($0) }).map { "\(host) is \($0) address" } }
        return nil
    }

    static func kind(v4 b: [UInt8]) -> String? {
        switch (b[0], b[1]) {
        case (0, _): "an unspecified (\"this network\")"
        case (127, _): "a loopback"
        case (10, _), (172, 16...31), (192, 168): "a private"
        case (100, 64...127): "a carrier-NAT"
        case (169, 254): "a link-local"
        case (224...239, _): "a multicast"
        case (240...255, _): "a reserved"
        default: nil
        }
    }

    static func kind(v6 b: [UInt8]) -> String? {
        let zero12 = b[0..<12].allSatisfy { $0 == 0 }
        if zero12 && b[12..<15].allSatisfy({ $0 == 0 }) && (b[15] == 0 || b[15] == 1) {
            return b[15] == 1 ? "a loopback" : "an unspecified"
        }
        // IPv4 inside IPv6: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002:ab:cd::).
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF { return kind(v4: Array(b[12..<16])) }
        if zero12 { return kind(v4: Array(b[12..<16])) }
        if b[0..<12] == [0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0] { return kind(v4: Array(b[12..<16])) }
        if b[0] == 0x20 && b[1] == 0x02 { return kind(v4: Array(b[2..<6])) }
        if b[0] & 0xFE == 0xFC { return "a private (unique local)" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return "a link-local" }
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return "a private (site-local)" }
        if b[0] == 0xFF { return "a multicast" }
        return nil
    }
}
