import Synchronization

/// The request rules of one mount: set when it starts, replaced when its policy file is reloaded. Whoever makes
/// requests or names URLs for the mount holds this object (there is no process-wide one), and takes a snapshot
/// (``current``) for each request or name.
///
/// Guarantees: a reader gets either the old or the new snapshot, never a mixture; ``replace(with:)`` changes what
/// requests and names made afterwards take, never a snapshot already taken (a URL's cache key is computed once, when
/// its ``ImageURL`` is made, so a reload changes the keys of URLs named afterwards only). Until the first reload,
/// reading takes no lock (every lookup and open asks, from every FUSE thread at once); after it, one brief lock around
/// copying a reference.
public final class RequestRulesHolder: Sendable {
    /// The snapshot the mount started with.
    private let first: RequestRules
    /// Whether ``replace(with:)`` was ever called (then ``snapshot`` holds the rules now).
    private let replaced = Atomic<Bool>(false)
    private let snapshot: Locked<RequestRules>

    /// A holder whose first snapshot is made from `rules`.
    public init(_ rules: HostRules = HostRules()) {
        first = RequestRules(rules)
        snapshot = Locked(first)
    }

    /// The rules now: what a request or name made now is made under.
    public var current: RequestRules {
        guard replaced.load(ordering: .acquiring) else { return first }
        return snapshot.withLock { $0 }
    }

    /// Replaces the rules for what is made from now on.
    public func replace(with rules: HostRules) {
        let next = RequestRules(rules)
        snapshot.withLock { $0 = next }
        replaced.store(true, ordering: .releasing)
    }
}
