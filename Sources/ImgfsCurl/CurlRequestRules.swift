import CCurl
import CCurlShims
import ImgfsModel

/// What the rules add to one transfer's easy handle: headers, user agent, referer, cookie file and proxy. Lives on the
/// fetcher's thread only, as long as its transfer.
///
/// Guarantees: the rule's headers, user agent, referer and cookie file go only to the scheme, host and port the
/// transfer was started for; a request to any other (after a redirect) carries imgfs's own headers and user agent only,
/// as curl's `--location` without `--location-trusted` does for credentials. Header values are never logged here.
final class CurlRequestRules {
    private let origin: String
    private let profile: RequestProfile
    /// imgfs's own header lines, and those plus the rule's.
    private let lists: CurlHeaderLists

    /// The profile of `url`'s host under `rules` (those the request was made under).
    init(url: ImageURL, rules: RequestRules, ownHeaders: [String], configuration: FetcherConfiguration) {
        origin = url.hostKey
        profile = rules.profile(for: url.host)
        lists = CurlHeaderLists.lists(own: ownHeaders, userAgent: configuration.userAgent, profile: profile)
    }

    /// Sets the options of the first request, and the proxy.
    func configure(_ easy: UnsafeMutableRawPointer, configuration: FetcherConfiguration) {
        if let proxy = configuration.proxy { imgfs_easy_setopt_string(easy, CURLOPT_PROXY, proxy) }
        if let noProxy = configuration.noProxy { imgfs_easy_setopt_string(easy, CURLOPT_NOPROXY, noProxy) }
        // A proxy's answer to CONNECT ("200 Connection established") is not the image's response head.
        imgfs_easy_setopt_long(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        if let cookieFile = profile.cookieFile { imgfs_easy_setopt_string(easy, CURLOPT_COOKIEFILE, cookieFile) }
        sendRuleHeaders(true, easy)
    }

    /// Before each request: the rule's additions when `effectiveURL` is on the transfer's own host, none otherwise.
    func prepareRequest(_ easy: UnsafeMutableRawPointer, effectiveURL: ImageURL?) {
        sendRuleHeaders(effectiveURL?.hostKey == origin, easy)
    }

    private func sendRuleHeaders(_ send: Bool, _ easy: UnsafeMutableRawPointer) {
        imgfs_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, send ? lists.full : lists.plain)
    }
}
