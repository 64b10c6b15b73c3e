import Foundation
import ImgfsFilesystem
import ImgfsModel
import Yams

/// A policy file (YAML, parsed by Yams): request rules by host pattern. See docs/CONFIGURATION.md.
///
/// Guarantees: a file is either read whole into ``HostRules`` or rejected with one line saying the file, the line and
/// the reason; unknown keys, wrong types, invalid patterns or headers and a default rule (`*`) that is not last are
/// errors, never ignored.
enum PolicyFile {
    /// Why a policy file cannot be used: `FILE:LINE: reason`, on one line.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    static let ruleKeys: Set<String> = [
        "host", "headers", "user-agent", "referer", "cookie-file", "deny", "cache-key",
        "expire", "cache-control", "max-size", "transfers-per-host",
        "keep-offline"
    ]

    /// The rules of the file at `path`, on top of the command line's `defaults`.
    static func load(_ path: String, defaults: HostRule) throws(Invalid) -> HostRules {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(description: "\(path): cannot be read")
        }
        guard data.count <= maximumBytes else {
            throw Invalid(description: "\(path): larger than \(maximumBytes / 1024) KiB, the limit of a policy file")
        }
        let text = String(decoding: data, as: UTF8.self)
        do {
            return HostRules(defaults: defaults, rules: try rules(in: text))
        } catch let error as Located {
            throw Invalid(description: "\(path):\(error.line): \(error.reason)")
        } catch let error as YamlError {
            throw Invalid(description: "\(path):\(yamlLine(error).map(String.init) ?? "?"): \(yamlReason(error))")
        } catch {
            throw Invalid(description: "\(path): \(error)")
        }
    }

    /// A reason with the line it belongs to.
    struct Located: Error {
        let line: Int
        let reason: String

        init(_ node: Yams.Node?, _ reason: String) {
            line = node?.mark?.line ?? 1
            self.reason = reason
        }
    }

    /// The largest policy file read.
    static let maximumBytes = 1 << 20
    /// The most nodes a file may hold once its aliases are expanded: YAML aliases let a small file stand for an
    /// exponentially large tree ("billion laughs"), so the tree is measured, up to this bound, before it is walked.
    static let maximumNodes = 100_000

    private static func rules(in text: String) throws -> [HostRule] {
        guard let root = try Yams.compose(yaml: text) else { return [] }
        var budget = maximumNodes
        guard fits(root, budget: &budget) else {
            throw Located(
                root, "the file expands to more than \(maximumNodes) nodes (YAML aliases repeat what they name)")
        }
        guard let top = root.mapping else { throw Located(root, "expected a mapping with the key rules") }
        var rules: [HostRule] = []
        for (key, value) in top {
            guard key.string == "rules" else { throw Located(key, "unknown key \(key.string ?? "?") (expected rules)") }
            guard let list = value.sequence else { throw Located(value, "rules: expected a list of rules") }
            for item in list {
                let rule = try self.rule(item)
                if rules.last?.pattern == "*" {
                    throw Located(item, "the default rule (host: \"*\") must be the last rule")
                }
                rules.append(rule)
            }
        }
        return rules
    }

    /// Whether `node`, with every alias expanded, has at most `budget` nodes (stops counting once it has not).
    private static func fits(_ node: Yams.Node, budget: inout Int) -> Bool {
        budget -= 1
        guard budget >= 0 else { return false }
        switch node {
        case .mapping(let mapping):
            for (key, value) in mapping where !fits(key, budget: &budget) || !fits(value, budget: &budget) {
                return false
            }
        case .sequence(let sequence):
            for item in sequence where !fits(item, budget: &budget) { return false }
        case .scalar, .alias: break
        }
        return true
    }

    private static func rule(_ node: Yams.Node) throws -> HostRule {
        guard let mapping = node.mapping else { throw Located(node, "a rule must be a mapping with a host key") }
        guard let hostNode = mapping["host"], let pattern = hostNode.string else {
            throw Located(node, "a rule needs host: PATTERN")
        }
        guard HostRule.isValidPattern(pattern) else { throw Located(hostNode, "host: not a host pattern: \(pattern)") }
        var rule = HostRule(pattern: pattern)
        for (key, value) in mapping {
            let name = key.string ?? ""
            guard ruleKeys.contains(name) else {
                throw Located(key, "unknown key \(name) (expected one of \(ruleKeys.sorted().joined(separator: ", ")))")
            }
            switch name {
            case "headers": rule.headers = try headers(value)
            case "user-agent": rule.userAgent = try string(value, name)
            case "referer": rule.referer = try string(value, name)
            case "cookie-file": rule.cookieFile = try string(value, name)
            case "deny": rule.deny = try boolean(value, name)
            case "cache-key": rule.dropQuery = try dropQuery(value)
            case "expire": rule.expire = try quantity(value, name, Quantity.seconds)
            case "cache-control": rule.cacheControl = try boolean(value, name)
            case "keep-offline": rule.keepOffline = try boolean(value, name)
            case "max-size": rule.maxSize = max(1, try quantity(value, name, Quantity.bytes))
            case "transfers-per-host":
                rule.transfersPerHost = try quantity(value, name) { Int($0).flatMap { $0 > 0 ? $0 : nil } }
            default: break
            }
        }
        return rule
    }

    private static func headers(_ node: Yams.Node) throws -> [String] {
        guard let mapping = node.mapping else { throw Located(node, "headers: expected a mapping of Name: value") }
        return try mapping.map { key, value in
            let line = "\(key.string ?? ""): \(try string(value, "headers"))"
            guard HostRule.isValidHeader(line) else {
                throw Located(key, "headers: not a valid header: \(key.string ?? "")")
            }
            return line
        }
    }

    private static func dropQuery(_ node: Yams.Node) throws -> [String] {
        guard let mapping = node.mapping else { throw Located(node, "cache-key: expected a mapping with drop-query") }
        var dropped: [String] = []
        for (key, value) in mapping {
            guard key.string == "drop-query" else { throw Located(key, "cache-key: unknown key \(key.string ?? "?")") }
            guard let list = value.sequence else { throw Located(value, "drop-query: expected a list of names") }
            dropped += try list.map { try string($0, "drop-query") }
        }
        return dropped
    }

    private static func string(_ node: Yams.Node, _ key: String) throws -> String {
        guard let scalar = node.scalar else { throw Located(node, "\(key): expected a string") }
        return scalar.string
    }

    private static func quantity<Value>(_ node: Yams.Node, _ key: String, _ parse: (String) -> Value?) throws -> Value {
        guard let value = parse(try string(node, key)) else {
            throw Located(node, "\(key): not a valid value: \(node.string ?? "")")
        }
        return value
    }

    private static func boolean(_ node: Yams.Node, _ key: String) throws -> Bool {
        switch node.scalar?.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw Located(node, "\(key): expected true or false")
        }
    }

    private static func yamlLine(_ error: YamlError) -> Int? {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark.line
        case .duplicatedKeysInMapping(_, let context): context.mark.line
        default: nil
        }
    }

    private static func yamlReason(_ error: YamlError) -> String {
        switch error {
        case .scanner(let context, let problem, _, _), .parser(let context, let problem, _, _),
            .composer(let context, let problem, _, _):
            [context?.text, problem].compactMap { $0 }.joined(separator: ": ")
        case .duplicatedKeysInMapping(let duplicates, _): "duplicated keys: \(duplicates.joined(separator: ", "))"
        default: "\(error)".replacingOccurrences(of: "\n", with: " ")
        }
    }
}
