import CHiredis
import Foundation
import ImgfsModel
import ImgfsPipeline

/// One hiredis connection (`redisContext`), used by one thread at a time (not Sendable: a ``RedisStore`` lends it).
///
/// Guarantees: every command goes through `redisCommandArgv` (binary-safe, no format strings, no variadic call);
/// connecting and every reply wait at most `timeout`; after any failure the connection reports itself broken and must
/// be dropped (hiredis leaves a context unusable after an I/O error or timeout).
final class RedisConnection {
    /// What a command answered.
    enum Reply: Equatable {
        case string([UInt8])
        case integer(Int)
        case status(String)
        case null
        case array([Reply])
    }

    private let context: UnsafeMutablePointer<redisContext>
    private(set) var isBroken = false

    /// Connects to `address`, authenticates and selects its database.
    init(address: SharedCacheAddress, timeout: TimeInterval) throws(SharedStoreError) {
        let interval = timeval(
            tv_sec: Int(saturating: timeout), tv_usec: Int(saturating: (timeout - timeout.rounded(.down)) * 1e6))
        guard let context = redisConnectWithTimeout(address.host, Int32(address.port), interval) else {
            throw .unavailable("out of memory")
        }
        // From here on a throw runs deinit, which frees the context (freeing it here too would free it twice).
        self.context = context
        if context.pointee.err != 0 {
            isBroken = true
            let reason = Self.errorText(context)
            throw Self.isTimeout(reason) ? .timedOut : .unavailable(reason)
        }
        _ = redisSetTimeout(context, interval)
        if let password = address.password {
            let user = address.user.map { [Array($0.utf8)] } ?? []
            let arguments = [Array("AUTH".utf8)] + user + [Array(password.utf8)]
            try closeOnFailure { () throws(SharedStoreError) in _ = try command(arguments) }
        }
        if address.database != 0 {
            try closeOnFailure { () throws(SharedStoreError) in
                _ = try command([Array("SELECT".utf8), Array(String(address.database).utf8)])
            }
        }
    }

    deinit {
        redisFree(context)
    }

    /// Runs one command; an error reply throws ``SharedStoreError/refused(_:)``.
    func command(_ arguments: [[UInt8]]) throws(SharedStoreError) -> Reply {
        let raw = Self.withArgv(arguments) { argv, lengths in
            redisCommandArgv(context, Int32(arguments.count), argv, lengths)
        }
        guard let raw else {
            isBroken = true
            let reason = Self.errorText(context)
            throw Self.isTimeout(reason) ? .timedOut : .unavailable(reason)
        }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return try Self.convert(reply)
    }

    private func closeOnFailure(_ body: () throws(SharedStoreError) -> Void) throws(SharedStoreError) {
        do throws(SharedStoreError) {
            try body()
        } catch {
            isBroken = true
            throw error
        }
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) throws(SharedStoreError) -> Reply {
        let value = reply.pointee
        func text() -> [UInt8] {
            guard let str = value.str else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: value.len))
        }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_INTEGER: return .integer(Int(value.integer))
        case REDIS_REPLY_STATUS: return .status(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_NIL: return .null
        case REDIS_REPLY_ERROR: throw .refused(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_ARRAY:
            var elements: [Reply] = []
            for index in 0..<value.elements {
                guard let element = value.element[index] else { continue }
                elements.append(try convert(element))
            }
            return .array(elements)
        default: throw .refused("unknown reply type \(value.type)")
        }
    }

    /// Calls `body` with C views of `arguments` (pointers and lengths), valid during the call.
    private static func withArgv<Result>(
        _ arguments: [[UInt8]], _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Result
    ) -> Result {
        let pointers = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: max(1, arguments.count))
        defer { pointers.deallocate() }
        var copies: [UnsafeMutableRawPointer] = []
        defer { copies.forEach { $0.deallocate() } }
        for (index, argument) in arguments.enumerated() {
            let copy = UnsafeMutableRawPointer.allocate(byteCount: max(1, argument.count), alignment: 1)
            argument.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { copy.copyMemory(from: base, byteCount: bytes.count) }
            }
            copies.append(copy)
            pointers[index] = UnsafePointer(copy.assumingMemoryBound(to: CChar.self))
        }
        let lengths = arguments.map(\.count)
        return lengths.withUnsafeBufferPointer { body(pointers, $0.baseAddress!) }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    private static func isTimeout(_ reason: String) -> Bool {
        reason.contains("temporarily unavailable") || reason.lowercased().contains("timed out")
    }
}
