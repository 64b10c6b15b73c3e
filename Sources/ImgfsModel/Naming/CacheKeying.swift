/// What decides a URL's cache key beyond its text: the query parameters left out of keys, and the credentials
/// requests to a host carry. The naming layer asks it once, when an ``ImageURL`` is made; the rules that answer live
/// above it (``RequestRules``), so naming depends on no request type and on no global.
///
/// Implementations must be immutable values (or behave as such): the same question always gets the same answer, from
/// any thread.
public protocol CacheKeying: Sendable {
    /// The text `resource` (a URL of `host` without fragment, as requested) is cached under.
    func cacheKeyText(for resource: String, host: String) -> String
    /// The digest of the credentials requests to `host` carry, nil when they carry none.
    func credentialScope(for host: String) -> String?
}
