import Glibc

/// Small helpers around Glibc file calls; errno never leaves this module.
enum SystemFile {
    /// The whole contents of a small file (such as those under /proc and /sys), or nil when it cannot be read.
    ///
    /// Reads until end of file because /proc files report a size of 0; stops at `limit` bytes.
    static func contents(of path: String, limit: Int = 1 << 20) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether something exists at `path`.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    /// The text for an errno value, such as "Invalid argument".
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    /// The first whole number in a file holding one number (cgroup files), or nil when missing or not a number
    /// (cgroup v2 writes "max" for no limit).
    static func number(at path: String) -> Int? {
        guard let text = contents(of: path, limit: 256) else { return nil }
        let trimmed = text.split(whereSeparator: { $0 == "\n" || $0 == " " }).first
        return trimmed.flatMap { Int($0) }
    }
}

extension Duration {
    /// Whole microseconds, rounded toward zero.
    var wholeMicroseconds: Int64 {
        let parts = components
        return parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000
    }

    /// Milliseconds for `poll`, at least 1 and at most Int32.max.
    var pollTimeout: Int32 {
        let milliseconds = wholeMicroseconds / 1000
        return Int32(clamping: max(1, milliseconds))
    }
}
