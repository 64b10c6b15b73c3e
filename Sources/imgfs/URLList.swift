import Foundation
import Glibc

/// The list `imgfs prefetch` reads: one URL a line; blank lines and lines starting with `#` are skipped, and the
/// whitespace around each URL (a `\r` of CRLF files included) is dropped.
enum URLList {
    /// Why the list could not be read, with the errno's text.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// The URLs in the file at `path`, or on standard input when `path` is nil or `-`.
    static func read(from path: String?) throws(Unreadable) -> [String] {
        entries(try readText(from: path ?? "-"))
    }

    /// The whole text of the file at `path`, or of standard input when `path` is `-`.
    static func readText(from path: String) throws(Unreadable) -> String {
        String(decoding: try readBytes(from: path), as: UTF8.self)
    }

    /// The whole content of the file at `path`, or of standard input when `path` is `-`.
    static func readBytes(from path: String) throws(Unreadable) -> [UInt8] {
        guard path != "-" else { return try contents(of: STDIN_FILENO, name: "standard input") }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Unreadable(description: "cannot open the list \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        return try contents(of: descriptor, name: path)
    }

    /// The URLs in `text`, in order (duplicates kept).
    static func entries(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let entry = line.trimmingCharacters(in: .whitespaces)
            return entry.isEmpty || entry.hasPrefix("#") ? nil : entry
        }
    }

    /// Everything `descriptor` holds, read to its end.
    private static func contents(of descriptor: Int32, name: String) throws(Unreadable) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else {
                throw Unreadable(description: "cannot read the list \(name): \(String(cString: strerror(errno)))")
            }
            if count == 0 { return bytes }
            bytes += chunk[..<count]
        }
    }
}
