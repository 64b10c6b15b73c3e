import Foundation
import ImgfsModel

/// Failures remembered per cache key: recent ones answer later requests without a transfer (the failed-URL blacklist
/// of the image loaders) or a decode, and the last one of each key is kept for its error attribute until it succeeds.
/// Two kinds share it: failed transfers of images (by URL key) and failed productions of variants (by variant key,
/// with the validator of the original they were made from; ``VariantStore``).
///
/// Guarantees: a transfer's failure is answered again only within its memory (``FailureMemory``: permanent for 404,
/// 410 and unresolvable hosts, transient for the rest), after which it is forgotten; a cancelled transfer is
/// remembered neither way (nobody's fault), nor is one ended by a shutdown or by a change of the image under the
/// transfer (``FetchError/changed(_:)``: only its last error is kept, and the next use fetches the new version); a
/// variant's failure is answered again only to a production of the same validator; at most 10,000 last errors are
/// kept, of both kinds together. Not thread-safe by itself: it lives in the repository's locked state.
struct RememberedFailures {
    /// A failure, of either kind.
    private enum Failure: Equatable {
        case transfer(FetchError)
        case variant(VariantError)
    }

    /// A failure that answers again: a transfer's within its memory after `at`, a variant's while its original keeps
    /// `validator`.
    private struct Recent {
        let failure: Failure
        let at: Date
        let validator: String?
    }

    private var recent: [String: Recent] = [:]
    private var last: [String: Failure] = [:]
    private static let lastErrorLimit = 10_000

    mutating func record(_ key: String, _ error: FetchError, at date: Date) {
        if case .changed = error {
            // The image changed under a transfer: the next use fetches its new version, at once.
            setLastError(error, forKey: key)
            return
        }
        guard error != .cancelled && error != .shutDown else { return }
        recent[key] = Recent(failure: .transfer(error), at: date, validator: nil)
        setLastError(error, forKey: key)
    }

    /// Records `error` as the last one of `key` (a refusal, which is not a failed transfer); returns whether it is
    /// new for `key`.
    @discardableResult
    mutating func setLastError(_ error: FetchError, forKey key: String) -> Bool {
        setLast(.transfer(error), forKey: key)
    }

    /// The failure of `key` while it is remembered (forgotten once its memory has passed).
    mutating func recent(_ key: String, now: Date, memory: FailureMemory) -> FetchError? {
        guard let entry = recent[key], case .transfer(let error) = entry.failure else { return nil }
        let duration = error.meansGone || error.isUnresolvable ? memory.permanent : memory.transient
        if now.timeIntervalSince(entry.at) < duration { return error }
        recent[key] = nil
        return nil
    }

    func lastError(_ key: String) -> FetchError? {
        guard case .transfer(let error) = last[key] else { return nil }
        return error
    }

    /// A fetch of `key` succeeded, or a variant under `key` was made.
    mutating func clearLastError(_ key: String) { last[key] = nil }

    /// `rm` of the file: the next access tries again.
    mutating func forget(_ key: String) { recent[key] = nil }

    /// `imgfs purge`: the next access of every URL tries again (last errors stay, for `imgfs why`; so do the failures
    /// of variants, which are answered again only for an unchanged original).
    mutating func forgetTransfers() {
        recent = recent.filter { entry in
            if case .variant = entry.value.failure { return true }
            return false
        }
    }

    // MARK: - Variants

    /// Remembers the failure of the variant under `key` made from an original of `validator`.
    mutating func remember(_ key: String, _ error: VariantError, validator: String, at date: Date) {
        recent[key] = Recent(failure: .variant(error), at: date, validator: validator)
    }

    /// The remembered failure of the variant under `key` when it was made from an original of `validator`.
    func recent(_ key: String, validator: String) -> VariantError? {
        guard let entry = recent[key], entry.validator == validator, case .variant(let error) = entry.failure else {
            return nil
        }
        return error
    }

    /// Records `error` as the last one of the variant under `key`.
    mutating func setLastError(_ error: VariantError, forKey key: String) {
        setLast(.variant(error), forKey: key)
    }

    /// The last failure of the variant under `key`, until it is made.
    func lastVariantError(_ key: String) -> VariantError? {
        guard case .variant(let error) = last[key] else { return nil }
        return error
    }

    /// Sets the last failure of `key`; returns whether it is new for `key`.
    @discardableResult
    private mutating func setLast(_ failure: Failure, forKey key: String) -> Bool {
        if last[key] == nil, last.count >= Self.lastErrorLimit, let any = last.keys.first { last[any] = nil }
        defer { last[key] = failure }
        return last[key] != failure
    }
}
