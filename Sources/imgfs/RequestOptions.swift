import ArgumentParser
import Foundation
import ImgfsCurl
import ImgfsFilesystem
import ImgfsModel

/// The request options of `imgfs mount`: what requests carry, the proxy, the policy file and the placeholder image.
struct RequestOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "A request header 'Name: value' (repeatable); sent only to the URL's own host. 'User-Agent: …' replaces "
                + "imgfs/VERSION, 'Referer: …' sets the Referer.",
            valueName: "header"))
    var header: [String] = []

    @Option(help: "A Netscape-format cookie file (as curl and browsers export), read at each transfer, never written.")
    var cookieFile: String?

    @Option(help: "Proxy URL (http://, https://, socks5://, socks5h://); default: $http_proxy, $HTTPS_PROXY, …")
    var proxy: String?

    @Option(
        help: ArgumentHelp(
            "Hosts reached without the proxy, comma separated ('*': all); default: $NO_PROXY.",
            valueName: "list"))
    var noproxy: String?

    @Option(help: "A policy file (YAML) of rules by host; reread on SIGHUP and `imgfs reload MOUNTPOINT`.")
    var policyFile: String?

    @Option(help: "An image served, with its own size, for any URL that fails (user.imgfs.error still says why).")
    var placeholder: String?

    func validate() throws {
        for line in header where !HostRule.isValidHeader(line) {
            throw ValidationError("--header: expected 'Name: value': \(RequestProfile.masked(line))")
        }
        let schemes = ["http://", "https://", "socks5://", "socks5h://", "socks4://"]
        if let proxy, !schemes.contains(where: proxy.hasPrefix) {
            throw ValidationError("--proxy: expected an http://, https://, socks5:// or socks5h:// URL: \(proxy)")
        }
        for file in [cookieFile, placeholder].compactMap({ $0 })
        where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("cannot read \(file)")
        }
    }

    /// The command line's rule: what every host gets unless a policy rule says otherwise.
    var defaults: HostRule {
        var rule = HostRule(pattern: "*")
        rule.headers = header
        rule.cookieFile = cookieFile.map { URL(fileURLWithPath: $0).path }
        return rule
    }

    /// The rules to mount with (the policy file's, when given); throws the file's one-line error.
    func hostRules() throws -> HostRules {
        guard let policyFile else { return HostRules(defaults: defaults) }
        return try PolicyFile.load(policyFile, defaults: defaults)
    }

    /// The `--placeholder` image, read once at mount.
    func placeholderImage() throws -> Placeholder? {
        guard let placeholder else { return nil }
        guard let data = FileManager.default.contents(atPath: placeholder), !data.isEmpty else {
            throw ValidationError("--placeholder: cannot read \(placeholder) (or it is empty)")
        }
        return Placeholder(bytes: Array(data))
    }

    /// Sets the proxy options of `configuration`.
    func applyProxy(to configuration: inout FetcherConfiguration) {
        configuration.proxy = proxy
        configuration.noProxy = noproxy
    }
}
