import Foundation
import Glibc
import ImgfsTestSupport

/// A temporary directory with a mount point and a cache directory, for mounts that the test does not start itself
/// (through mount.fuse3, background `imgfs mount`, the systemd units' command lines).
///
/// `cleanUp()` lazily unmounts whatever is still mounted on the mount point, kills (SIGKILL) every daemon pid it was
/// told about that is still alive, and removes the directory; tests call it in a `defer`.
final class ScratchMount: @unchecked Sendable {
    let root: String
    let mountPoint: String
    let cacheDirectory: String
    private var daemons: [pid_t] = []

    init() throws {
        root = "/tmp/imgfs-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        mountPoint = "\(root)/mnt"
        cacheDirectory = "\(root)/cache"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    }

    /// How many imgfs filesystems are mounted on the mount point now (more than one means stacked mounts).
    var mountCount: Int {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        return table.split(separator: "\n").filter { $0.contains(" \(mountPoint) ") && $0.contains(" - fuse.imgfs ") }
            .count
    }

    var isMounted: Bool { mountCount > 0 }

    /// Whether an imgfs mount is there but its daemon is gone (statvfs fails with ENOTCONN; stat can still succeed
    /// from the kernel's attribute cache).
    var isDead: Bool {
        var filesystem = statvfs()
        return isMounted && statvfs(mountPoint, &filesystem) != 0 && errno == ENOTCONN
    }

    /// The mount's super options (e.g. `rw,user_id=0,group_id=0,allow_other`), from /proc/self/mountinfo.
    var superOptions: String? {
        let table = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        guard
            let line = table.split(separator: "\n").last(where: {
                $0.contains(" \(mountPoint) ") && $0.contains(" - fuse.imgfs ")
            })
        else {
            return nil
        }
        return line.components(separatedBy: " - ").last?.split(separator: " ").last.map(String.init)
    }

    /// `.imgfs/stats.json` of the mount, parsed.
    func statistics() -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: "\(mountPoint)/.imgfs/stats.json"),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    /// The daemon's pid from stats.json; remembered, so that `cleanUp()` kills it if it is still alive.
    func daemonPID() -> pid_t? {
        guard let pid = statistics()["pid"] as? Int else { return nil }
        daemons.append(pid_t(pid))
        return pid_t(pid)
    }

    /// `repository.memory_budget` from stats.json.
    func memoryBudget() -> Int? {
        (statistics()["repository"] as? [String: Any])?["memory_budget"] as? Int
    }

    /// Whether `pid` is a live process (a zombie waiting for its reaper counts as gone).
    static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }

    func cleanUp() {
        if isMounted { _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", "-z", mountPoint], timeout: 10) }
        for pid in daemons where Self.isAlive(pid) { kill(pid, SIGKILL) }
        if isMounted { _ = try? ChildProcess.run("/usr/bin/fusermount3", ["-u", "-z", mountPoint], timeout: 10) }
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Runs helper commands with an environment of the test's choosing.
enum HelperCommand {
    /// This process's environment with the directory of the imgfs binary under test first on PATH.
    static var environmentWithBinaryOnPath: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let directory = URL(fileURLWithPath: MountedImgfs.binary).deletingLastPathComponent().path
        environment["PATH"] = "\(directory):\(environment["PATH"] ?? "/usr/sbin:/usr/bin:/sbin:/bin")"
        return environment
    }

    /// Runs `executable` to completion (killing it after `timeout` seconds) and returns its exit status and its
    /// combined output.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String],
        timeout: Double = 60
    ) throws -> (status: Int32, output: String) {
        let outputPath = "/tmp/imgfs-helper-output-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { unlink(outputPath) }
        let child = try ChildProcess.spawn(
            resolve(executable, path: environment["PATH"] ?? ""), arguments,
            environment: environment, outputPath: outputPath)
        let status = child.wait(timeout: timeout)
        if status == nil { child.kill9AndReap() }
        let output = String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
        return (status ?? -1, output)
    }

    /// `executable` looked up in `path` (posix_spawnp would search this process's PATH, not the child's).
    static func resolve(_ executable: String, path: String) -> String {
        guard !executable.contains("/") else { return executable }
        for directory in path.split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(directory)/\(executable)") {
            return "\(directory)/\(executable)"
        }
        return executable
    }

    /// The lines of `output` that are not empty.
    static func lines(_ output: String) -> [Substring] {
        output.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
    }
}

/// The commands of a systemd service unit file, as systemd would run them: `%` specifiers, `$$`, `$VAR` (a word
/// of its own: split at whitespace, zero or more arguments) and `${VAR}` (inside a word), single and double quotes,
/// and the `-` prefix (failure ignored). Only what imgfs's unit files use is supported.
struct SystemdUnit {
    struct Command {
        let arguments: [String]
        let ignoresFailure: Bool
    }

    let path: String
    /// Each `[Service]` key's values in order (ExecStartPre= may appear several times).
    private var service: [String: [String]] = [:]

    init(path: String) throws {
        self.path = path
        var section = ""
        for rawLine in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                section = line
                continue
            }
            guard section == "[Service]", let equals = line.firstIndex(of: "=") else { continue }
            service[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
    }

    func values(_ key: String) -> [String] { service[key] ?? [] }

    /// The commands of `key` (ExecStartPre, ExecStart, ExecStartPost, ExecStop), with `specifiers` (e.g. `f`, `i`,
    /// `h`, `C`) and `environment` substituted.
    func commands(_ key: String, specifiers: [Character: String], environment: [String: String]) throws -> [Command] {
        try values(key).map { value in
            var text = Substring(value)
            var ignoresFailure = false
            while let first = text.first, "-@+!:".contains(first) {
                if first == "-" { ignoresFailure = true }
                text = text.dropFirst()
            }
            var arguments: [String] = []
            for (word, quoted) in try Self.words(String(text)) {
                let expanded = try Self.specifiers(word, specifiers)
                if !quoted, expanded.hasPrefix("$"), !expanded.hasPrefix("$$"), !expanded.hasPrefix("${") {
                    let name = String(expanded.dropFirst())
                    arguments += (environment[name] ?? "").split(whereSeparator: \.isWhitespace).map(String.init)
                } else {
                    arguments.append(Self.variables(expanded, environment))
                }
            }
            return Command(arguments: arguments, ignoresFailure: ignoresFailure)
        }
    }

    /// The `Environment=` assignments of the unit (`NAME=value` or `"NAME=value with spaces"`).
    var environment: [String: String] {
        var result: [String: String] = [:]
        for value in values("Environment") {
            for (word, _) in (try? Self.words(value)) ?? [] {
                let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
            }
        }
        return result
    }

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// Splits at unquoted whitespace; each word says whether any of it was quoted.
    private static func words(_ text: String) throws -> [(String, Bool)] {
        var words: [(String, Bool)] = []
        var current = ""
        var inWord = false, quoted = false
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
                quoted = true
            } else if character.isWhitespace {
                if inWord { words.append((current, quoted)) }
                current = ""
                inWord = false
                quoted = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil else { throw ParseError(description: "unterminated quote in: \(text)") }
        if inWord { words.append((current, quoted)) }
        return words
    }

    private static func specifiers(_ word: String, _ values: [Character: String]) throws -> String {
        var out = ""
        var iterator = word.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else {
                out.append(character)
                continue
            }
            guard let name = iterator.next() else { throw ParseError(description: "a lone % in \(word)") }
            if name == "%" {
                out.append("%")
            } else if let value = values[name] {
                out += value
            } else {
                throw ParseError(description: "the test gives no value for the specifier %\(name) in \(word)")
            }
        }
        return out
    }

    /// `$$` becomes `$`; `${NAME}` becomes the variable's value.
    private static func variables(_ word: String, _ environment: [String: String]) -> String {
        var out = ""
        var rest = Substring(word)
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("$") {
                out.append("$")
                rest = after.dropFirst()
            } else if after.hasPrefix("{"), let close = after.firstIndex(of: "}") {
                out += environment[String(after[after.index(after: after.startIndex)..<close])] ?? ""
                rest = after[after.index(after: close)...]
            } else {
                out.append("$")
                rest = after
            }
        }
        return out + rest
    }
}
