import Foundation
import ImgfsModel

/// Failures remembered per URL key: recent ones answer later requests without a transfer (the failed-URL blacklist of
/// the image loaders), and the last one of each URL is kept for its error attribute until a fetch succeeds.
///
/// Guarantees: a failure is answered again only within its memory (``FailureMemory``: permanent for 404, 410 and
/// unresolvable hosts, transient for the rest), after which it is forgotten; a cancelled transfer is remembered neither
/// way (nobody's fault), nor is one ended by a shutdown; at most 10,000 last errors are kept. Not thread-safe by
/// itself: it lives in the repository's locked state.
struct RememberedFailures {
    private var recent: [String: (error: FetchError, at: Date)] = [:]
    private var last: [String: FetchError] = [:]
    private static let lastErrorLimit = 10_000

    mutating func record(_ key: String, _ error: FetchError, at date: Date) {
        guard error != .cancelled && error != .shutDown else { return }
        recent[key] = (error, date)
        setLastError(error, forKey: key)
    }

    /// Records `error` as the last one of `key` (a refusal, which is not a failed transfer); returns whether it is
    /// new for `key`.
    @discardableResult
    mutating func setLastError(_ error: FetchError, forKey key: String) -> Bool {
        if last[key] == nil, last.count >= Self.lastErrorLimit, let any = last.keys.first { last[any] = nil }
        defer { last[key] = error }
        return last[key] != error
    }

    /// The failure of `key` while it is remembered (forgotten once its memory has passed).
    mutating func recent(_ key: String, now: Date, memory: FailureMemory) -> FetchError? {
        guard let (error, at) = recent[key] else { return nil }
        let duration = error.meansGone || error.isUnresolvable ? memory.permanent : memory.transient
        if now.timeIntervalSince(at) < duration { return error }
        recent[key] = nil
        return nil
    }

    func lastError(_ key: String) -> FetchError? { last[key] }

    /// A fetch of `key` succeeded.
    mutating func clearLastError(_ key: String) { last[key] = nil }

    /// `rm` of the file: the next access tries again.
    mutating func forget(_ key: String) { recent[key] = nil }
}
