/// The request rules of one mount: set when it starts, replaced when its policy file is reloaded. Whoever makes
/// requests or names URLs for the mount holds this object (there is no process-wide one), and takes a snapshot
/// (``current``) for each request or name.
///
/// Guarantees: a reader gets either the old or the new snapshot, never a mixture; ``replace(with:)`` changes what
/// requests and names made afterwards take, never a snapshot already taken (a URL's cache key is computed once, when
/// its ``ImageURL`` is made, so a reload changes the keys of URLs named afterwards only). Reading costs one brief lock
/// around copying a reference, whatever the rules.
public final class RequestRulesHolder: Sendable {
    private let snapshot: Locked<RequestRules>

    /// A holder whose first snapshot is made from `rules`.
    public init(_ rules: HostRules = HostRules()) {
        snapshot = Locked(RequestRules(rules))
    }

    /// The rules now: what a request or name made now is made under.
    public var current: RequestRules { snapshot.withLock { $0 } }

    /// Replaces the rules for what is made from now on.
    public func replace(with rules: HostRules) {
        let next = RequestRules(rules)
        snapshot.withLock { $0 = next }
    }
}
