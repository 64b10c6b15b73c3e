import Foundation
import ImgfsModel
import Testing

@testable import imgfs

/// Issue 18: the policy file's parsing and errors, the cache-key rules and header rules, and the fstab forms.
struct PolicyFileTests {
    private func load(_ text: String) throws(PolicyFile.Invalid) -> HostRules {
        let path = "/tmp/imgfs-policy-\(getpid())-\(UUID().uuidString.prefix(8)).yaml"
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try PolicyFile.load(path, defaults: HostRule(pattern: "*"))
    }

    private func error(_ text: String) -> String {
        do {
            _ = try load(text)
            return "no error"
        } catch {
            return error.description
        }
    }

    @Test("a full policy file is read into rules in file order")
    func validFile() throws {
        let rules = try load(
            """
            rules:
              - host: "*.cdn.example.com"
                headers:
                  Authorization: Bearer abc
                user-agent: Viewer/1
                referer: https://example.com/
                cookie-file: /tmp/cookies.txt
                cache-key:
                  drop-query: ["X-Amz-*", Expires]
              - host: ads.example.com
                deny: true
              - host: "*"
            """)
        #expect(rules.rules.map(\.pattern) == ["*.cdn.example.com", "ads.example.com", "*"])
        #expect(rules.rules[0].headers == ["Authorization: Bearer abc"])
        #expect(rules.rules[0].dropQuery == ["X-Amz-*", "Expires"])
        #expect(rules.profile(for: "img.cdn.example.com").userAgent == "Viewer/1")
        #expect(rules.profile(for: "ads.example.com").refusal != nil)
        #expect(rules.profile(for: "other.org").refusal == nil)
        #expect(rules.profile(for: "other.org").headers.isEmpty)
    }

    @Test("per-host settings: expire, cache-control, max-size, transfers-per-host")
    func settings() throws {
        let rules = try load(
            "rules:\n  - host: a.com\n    expire: 30m\n    cache-control: true\n    max-size: 2M\n    "
                + "transfers-per-host: 2\n    keep-offline: yes\n"
        )
        #expect(rules.rules[0].expire == 1800 && rules.rules[0].cacheControl == true)
        #expect(rules.rules[0].maxSize == 2 << 20 && rules.rules[0].transfersPerHost == 2)
        #expect(rules.rules[0].keepOffline == true)
        #expect(
            error("rules:\n  - host: a.com\n    max-size: lots\n").contains(":3: max-size: not a valid value: lots"))
        #expect(error("rules:\n  - host: a.com\n    transfers-per-host: 0\n").contains(":3: transfers-per-host"))
    }

    @Test("errors name the file's line and the reason, on one line")
    func errors() {
        #expect(
            error("rules:\n  - host: a.com\n    colour: blue\n").contains(":3: unknown key colour (expected one of"))
        #expect(error("rules:\n  - host: \"*\"\n  - host: a.com\n").contains(":3: the default rule"))
        #expect(error("rules:\n  - host: \"a b\"\n").contains(":2: host: not a host pattern"))
        #expect(error("rules:\n  - host: a.com\n    deny: maybe\n").contains(":3: deny: expected true or false"))
        #expect(
            error("rules:\n  - host: a.com\n    headers:\n      \"Bad Name\": x\n").contains(
                ":4: headers: not a valid header"))
        #expect(error("rules: [\n").contains(".yaml:2:"))
        #expect(error("settings: 1\n").contains(":1: unknown key settings"))
        for text in ["rules:\n  - host: a.com\n    colour: blue\n", "rules: [\n"] {
            #expect(!error(text).contains("\n"))
        }
    }

    @Test("cache-key rules drop parameters by name or glob, keep the others in order, and leave other URLs alone")
    func cacheKeyRules() {
        let rules = CacheKeyRules(dropped: ["X-Amz-*", "Expires", "utm_*", "token"])
        #expect(
            rules.keyText(for: "https://a.com/i.jpg?w=3&X-Amz-Signature=abc&Expires=9&h=4")
                == "https://a.com/i.jpg?w=3&h=4")
        #expect(rules.keyText(for: "https://a.com/i.jpg?x-amz-date=1&TOKEN=2") == "https://a.com/i.jpg")
        #expect(rules.keyText(for: "https://a.com/i.jpg?utm%5Fsource=x&w=1") == "https://a.com/i.jpg?w=1")
        #expect(rules.keyText(for: "https://a.com/i.jpg?tokens=1") == "https://a.com/i.jpg?tokens=1")
        #expect(rules.keyText(for: "https://a.com/i.jpg") == "https://a.com/i.jpg")
        #expect(CacheKeyRules().keyText(for: "https://a.com/i.jpg?Expires=1") == "https://a.com/i.jpg?Expires=1")
    }

    @Test("a rule's headers replace the command line's by name; User-Agent and Referer lines set those fields")
    func headerMerging() {
        var defaults = HostRule(pattern: "*")
        defaults.headers = ["X-A: 1", "User-Agent: Cli/1", "Cookie: s=1"]
        var rule = HostRule(pattern: "*.example.com")
        rule.headers = ["x-a: 2"]
        let rules = HostRules(defaults: defaults, rules: [rule])
        let profile = rules.profile(for: "img.example.com")
        #expect(profile.headers == ["Cookie: s=1", "x-a: 2"])
        #expect(profile.userAgent == "Cli/1")
        #expect(profile.masked == ["Cookie: ***", "x-a: ***"])
        #expect(rules.profile(for: "example.com").headers == ["X-A: 1", "Cookie: s=1"])
        #expect(!HostRule.isValidHeader("X-A: 1\r\nHost: evil") && !HostRule.isValidHeader("no colon"))
    }

    @Test("the new options have fstab forms")
    func fstabForms() {
        let rewritten = FstabOptions.rewrite([
            "mount", "/mnt", "-o", "disk_limit=0,proxy=http://127.0.0.1:3128,policy_file=/etc/p.yaml,allow_other"
        ])
        #expect(
            rewritten == [
                "mount", "/mnt", "--disk-limit", "0", "--proxy", "http://127.0.0.1:3128",
                "--policy-file", "/etc/p.yaml", "-o", "allow_other"
            ])
    }
}

/// Issue 34: policy files are hostile input too.
struct PolicyFileLimitTests {
    private func load(_ text: String) -> (String, Double) {
        let path = "/tmp/imgfs-policy-\(getpid())-\(UUID().uuidString.prefix(8)).yaml"
        try? text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let start = Date()
        do {
            _ = try PolicyFile.load(path, defaults: HostRule(pattern: "*"))
            return ("no error", Date().timeIntervalSince(start))
        } catch {
            return (error.description, Date().timeIntervalSince(start))
        }
    }

    /// A valid file: one rule with `headers` headers, anchored, and `rules` aliases of it.
    static func aliasBomb(headers: Int, rules: Int) -> String {
        let fields = (0..<headers).map { "      X-Header-\($0): value" }.joined(separator: "\n")
        return "rules:\n  - &r\n    host: x.example.com\n    headers:\n\(fields)\n"
            + String(repeating: "  - *r\n", count: rules)
    }

    @Test("a file of aliases that expands to millions of nodes is refused at once, with the reason")
    func aliasExpansion() {
        let (error, seconds) = load(Self.aliasBomb(headers: 1000, rules: 5000))
        #expect(error.contains("alias"), "\(error)")
        #expect(seconds < 2, "took \(seconds) s")
    }

    @Test("a few aliases are fine; a file over the size limit is refused before it is parsed")
    func sizeLimit() {
        let small = "rules:\n  - &b {host: a.example.com, deny: true}\n  - *b\n"
        #expect(load(small).0 == "no error")
        let huge = "rules:\n" + String(repeating: "  - host: a.example.com\n    deny: true\n", count: 40_000)
        let (error, _) = load(huge)
        #expect(error.contains("larger than"), "\(error)")
    }
}
