import CCurl
import CCurlShims
import Foundation
import ImgfsModel

/// The address policy at the two moments curl lets imgfs look: before a socket is opened to an address, and before
/// each request (redirects included) is sent on a connection.
extension CurlTransfer {
    /// Before a socket is opened: whether the policy allows the address (so a refused address is never connected to,
    /// and an open port answers like a closed one).
    func allowSocket(to address: UnsafeMutablePointer<curl_sockaddr>) -> Bool {
        var text = [CChar](repeating: 0, count: 64)
        let numeric = imgfs_sockaddr_text(address, &text, text.count) == 0 ? Self.string(text) : ""
        if let reason = configuration.addressPolicy.refusal(numericAddress: numeric) {
            refusal = reason
            return false
        }
        return true
    }

    /// Before a host name is resolved (the first request's and every redirect's): whether the policy allows the
    /// host, so that a host `--allow-host` or a policy rule refuses is never looked up in DNS.
    func allowResolving() -> Bool {
        var effective: UnsafePointer<CChar>?
        imgfs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let effectiveURL = effective.map { String(cString: $0) } ?? ""
        guard effectiveURL != requestedURL, !effectiveURL.isEmpty else {
            refusal = configuration.addressPolicy.refusal(host: url.host)
            return refusal == nil
        }
        if let host = Self.host(of: effectiveURL) {
            refusal = configuration.addressPolicy.refusal(host: host) ?? request.rules.profile(for: host).refusal
        } else {
            refusal = configuration.addressPolicy.refusal(unparsableURL: effectiveURL)
        }
        return refusal == nil
    }

    /// Before each request (after connecting): whether the policy allows this host and connected address. The host
    /// of a redirect is read with curl's own URL parser, the one that chose where to connect; a URL it cannot read
    /// is refused when the policy restricts hosts.
    func allowRequest(primaryAddress: String) -> Bool {
        var effective: UnsafePointer<CChar>?
        imgfs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let policy = configuration.addressPolicy
        let effectiveURL = effective.map { String(cString: $0) } ?? ""
        let redirected = effectiveURL != requestedURL
        // Without a redirect the effective URL is the requested one: its host is known without parsing it again.
        let host = redirected ? Self.host(of: effectiveURL) : url.host
        if let host {
            refusal = policy.refusal(host: host)
        } else {
            refusal = policy.refusal(unparsableURL: effectiveURL)
        }
        refusal = refusal ?? policy.refusal(numericAddress: primaryAddress)
        if refusal == nil, let host {
            refusal = request.rules.profile(for: host).refusal
        }
        connectedAddress = primaryAddress.isEmpty ? nil : primaryAddress
        rules?.prepareRequest(easy, effectiveURL: redirected ? try? ImageURL(effectiveURL) : url)
        return refusal == nil
    }

    /// The text of a NUL-terminated buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host of `url` as curl reads it, or nil.
    private static func host(of url: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 1024)
        return imgfs_url_host(url, &buffer, buffer.count) == 0 ? string(buffer) : nil
    }
}
