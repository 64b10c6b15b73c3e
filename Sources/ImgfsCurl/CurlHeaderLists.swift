import CCurl
import ImgfsModel

/// The two header lists of a transfer: imgfs's own lines, and those plus its host's rule. Built once for a set of
/// lines and shared by every transfer that sends the same lines (curl only reads a list), freed with the last one.
///
/// Guarantees: the lists never change after they are built; ``lists(own:userAgent:profile:)`` returns lists whose
/// lines are exactly the ones asked for.
final class CurlHeaderLists: @unchecked Sendable {
    /// What the lists were built from.
    private struct Key: Equatable {
        var own: [String]
        var userAgent: String
        var profile: RequestProfile
    }

    /// The lists built last: transfers without conditional headers, to hosts without a rule of their own, all ask
    /// for the same lines.
    private static let recent = Locked<(key: Key, lists: CurlHeaderLists)?>(nil)

    let plain: UnsafeMutablePointer<curl_slist>?
    let full: UnsafeMutablePointer<curl_slist>?

    /// The lists for `own` lines and imgfs's `userAgent`, with `profile`'s additions in the full one.
    static func lists(own: [String], userAgent: String, profile: RequestProfile) -> CurlHeaderLists {
        let key = Key(own: own, userAgent: userAgent, profile: profile)
        if let recent = recent.withLock({ $0 }), recent.key == key { return recent.lists }
        let lists = CurlHeaderLists(key)
        recent.withLock { $0 = (key, lists) }
        return lists
    }

    private init(_ key: Key) {
        // The user agent and referer travel as header lines: curl fixes CURLOPT_USERAGENT and CURLOPT_REFERER for
        // all the redirects of a transfer (and drops its own User-Agent for good once a list has one), while the
        // header list can change before each request.
        let named = [
            "User-Agent: \(key.profile.userAgent ?? key.userAgent)",
            key.profile.referer.map { "Referer: \($0)" }
        ]
        var plain: UnsafeMutablePointer<curl_slist>?
        var full: UnsafeMutablePointer<curl_slist>?
        for line in key.own + ["User-Agent: \(key.userAgent)"] { plain = curl_slist_append(plain, line) }
        for line in key.own + named.compactMap({ $0 }) + key.profile.headers { full = curl_slist_append(full, line) }
        self.plain = plain
        self.full = full
    }

    deinit {
        curl_slist_free_all(plain)
        curl_slist_free_all(full)
    }
}
