import Foundation
import Glibc

/// An errno, as a test expects it.
struct Errno: Error, Equatable, CustomStringConvertible {
    let code: Int32

    init(_ code: Int32) { self.code = code }

    var description: String { "errno \(code) (\(String(cString: strerror(code))))" }
}

/// Reads through the kernel with plain system calls, reporting errno, as a program would.
enum PosixFile {
    /// The whole file, or the errno of the first call that failed.
    static func read(_ path: String) -> Result<[UInt8], Errno> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(Errno(errno)) }
        defer { close(descriptor) }
        return readAll(descriptor)
    }

    /// Everything from offset 0 of an open `descriptor` (whatever its file position) in reads of `readSize` bytes,
    /// or the errno.
    static func readAll(_ descriptor: Int32, readSize: Int = 256 * 1024) -> Result<[UInt8], Errno> {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: readSize)
        while true {
            let count = buffer.withUnsafeMutableBytes {
                pread(descriptor, $0.baseAddress, $0.count, off_t(bytes.count))
            }
            if count < 0 { return .failure(Errno(errno)) }
            if count == 0 { return .success(bytes) }
            bytes += buffer[..<count]
        }
    }

    /// The first `count` bytes, and the seconds it took from open to having them.
    static func readPrefix(_ path: String, count: Int) -> (bytes: [UInt8], seconds: Double)? {
        let start = Date()
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: count)
        while bytes.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, count - bytes.count) }
            if got <= 0 { return nil }
            bytes += buffer[..<got]
        }
        return (bytes, Date().timeIntervalSince(start))
    }

    /// The size `stat` reports, or the errno.
    static func size(_ path: String) -> Result<Int, Errno> {
        var status = stat()
        guard stat(path, &status) == 0 else { return .failure(Errno(errno)) }
        return .success(Int(status.st_size))
    }

    /// The errno of opening `path` with `flags` (0 when it opened).
    static func openError(_ path: String, flags: Int32, mode: mode_t = 0o644) -> Int32 {
        let descriptor = open(path, flags | O_CLOEXEC, mode)
        if descriptor >= 0 {
            close(descriptor)
            return 0
        }
        return errno
    }
}

/// Runs `count` blocking jobs on their own threads at once and waits for all of them.
enum ParallelThreads {
    static func run<Value: Sendable>(_ count: Int, _ job: @escaping @Sendable (Int) -> Value) -> [Value] {
        let results = ResultBox<Value>(count: count)
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                results.set(index, job(index))
                group.leave()
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        group.wait()
        return results.values
    }

    private final class ResultBox<Value>: @unchecked Sendable {
        private var slots: [Value?]
        private let lock = NSLock()

        init(count: Int) { slots = Array(repeating: nil, count: count) }

        func set(_ index: Int, _ value: Value) {
            lock.lock()
            slots[index] = value
            lock.unlock()
        }

        var values: [Value] {
            lock.lock()
            defer { lock.unlock() }
            return slots.map { $0! }
        }
    }
}
