import Foundation
import ImgfsModel

/// Reads a ``CacheRecord`` from the JSON ``DiskCache`` writes (a flat object of strings, numbers, booleans), without
/// `JSONDecoder`, whose generic decoding took an eighth of the daemon's CPU time reading small files after a remount.
///
/// Guarantees: for JSON as `JSONEncoder` writes it, a record it returns equals what `JSONDecoder` decodes from the same
/// bytes (dates as seconds since the reference date, numbers correctly rounded, unknown keys ignored, `null` or a
/// missing key for an absent optional); it reads nothing that is not valid JSON.
/// Anything it does not expect — a `\u` escape, a nested value, a number where a string belongs, trailing bytes, a
/// missing required key — returns nil, and the caller decodes with `JSONDecoder`, which then decides.
enum CacheRecordParser {
    /// The record in `bytes`: read by ``parse(_:)``, else by `JSONDecoder` (which throws what it finds wrong).
    static func decode(_ bytes: [UInt8]) throws -> CacheRecord {
        if let record = parse(bytes) { return record }
        return try JSONDecoder().decode(CacheRecord.self, from: Data(bytes))
    }

    /// The record in `bytes`, or nil when they are not in the form this parser reads.
    static func parse(_ bytes: [UInt8]) -> CacheRecord? {
        bytes.withUnsafeBufferPointer { buffer in
            var scanner = Scanner(bytes: buffer)
            guard let fields = scanner.object(), scanner.atEnd() else { return nil }
            return record(fields)
        }
    }

    /// A value of the object.
    private enum Value {
        case string(String)
        case number(Substring)
        case bool(Bool)
        case null
    }

    private static func record(_ fields: [String: Value]) -> CacheRecord? {
        guard let key = string(fields["key"]), let url = string(fields["url"]),
            let size = integer(fields["size"]).flatMap({ Int(exactly: $0) }),
            let fetchedAt = date(fields["fetchedAt"]), let expiresAt = date(fields["expiresAt"]),
            let checksum = integer(fields["checksum"]).flatMap({ UInt32(exactly: $0) }),
            let lastAccess = date(fields["lastAccess"]),
            let contentType = optional(fields["contentType"], string), let etag = optional(fields["etag"], string),
            let lastModified = optional(fields["lastModified"], date),
            let validatedAt = optional(fields["validatedAt"], date),
            let expiryFromHeaders = optional(fields["expiryFromHeaders"], bool),
            let remoteAddress = optional(fields["remoteAddress"], string)
        else { return nil }
        return CacheRecord(
            key: key, url: url, size: size, contentType: contentType, etag: etag, lastModified: lastModified,
            fetchedAt: fetchedAt, expiresAt: expiresAt, checksum: checksum, lastAccess: lastAccess,
            validatedAt: validatedAt, expiryFromHeaders: expiryFromHeaders, remoteAddress: remoteAddress)
    }

    /// `.some(nil)` when the key is missing or null, `.some(value)` when it reads as `read` says, nil otherwise.
    private static func optional<T>(_ value: Value?, _ read: (Value?) -> T?) -> T?? {
        switch value {
        case nil, .null?: return .some(nil)
        case let value?: return read(value).map { .some($0) }
        }
    }

    private static func string(_ value: Value?) -> String? {
        if case .string(let text)? = value { return text }
        return nil
    }

    private static func bool(_ value: Value?) -> Bool? {
        if case .bool(let flag)? = value { return flag }
        return nil
    }

    /// A number without fraction or exponent, as `JSONDecoder` reads into an integer type.
    private static func integer(_ value: Value?) -> Int64? {
        guard case .number(let text)? = value, text.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "-") })
        else { return nil }
        return Int64(text)
    }

    private static func date(_ value: Value?) -> Date? {
        guard case .number(let text)? = value, let seconds = Double(text), seconds.isFinite else { return nil }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// Reads the bytes of one JSON object from the front.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var position = 0

        mutating func atEnd() -> Bool {
            skipSpace()
            return position == bytes.count
        }

        /// `{ "key": value, … }` with flat values; nil on anything else.
        mutating func object() -> [String: Value]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var fields: [String: Value] = [:]
            if take(UInt8(ascii: "}")) { return fields }
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")), let value = value() else { return nil }
                fields[key] = value
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? fields : nil
        }

        private mutating func value() -> Value? {
            skipSpace()
            guard position < bytes.count else { return nil }
            switch bytes[position] {
            case UInt8(ascii: "\""): return string().map(Value.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return nil
            }
        }

        /// A string with the escapes JSONEncoder writes for ASCII (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`).
        private mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var text: [UInt8] = []
            while position < bytes.count {
                let byte = bytes[position]
                position += 1
                switch byte {
                case UInt8(ascii: "\""): return String(validating: text, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard position < bytes.count, let unescaped = Self.unescaped(bytes[position]) else { return nil }
                    text.append(unescaped)
                    position += 1
                case 0..<0x20: return nil
                default: text.append(byte)
                }
            }
            return nil
        }

        private static func unescaped(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return byte
            case UInt8(ascii: "b"): return 0x08
            case UInt8(ascii: "f"): return 0x0C
            case UInt8(ascii: "n"): return 0x0A
            case UInt8(ascii: "r"): return 0x0D
            case UInt8(ascii: "t"): return 0x09
            default: return nil  // \u and anything unknown: JSONDecoder decides
            }
        }

        /// A number as JSON spells it: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
        private mutating func number() -> Value? {
            let start = position
            _ = take(exactly: UInt8(ascii: "-"))
            if !take(exactly: UInt8(ascii: "0")) {
                guard digits() > 0 else { return nil }
            }
            if take(exactly: UInt8(ascii: ".")) {
                guard digits() > 0 else { return nil }
            }
            if take(exactly: UInt8(ascii: "e")) || take(exactly: UInt8(ascii: "E")) {
                if !take(exactly: UInt8(ascii: "+")) { _ = take(exactly: UInt8(ascii: "-")) }
                guard digits() > 0 else { return nil }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
            return .number(Substring(text))
        }

        /// Takes the decimal digits that come next; returns how many.
        private mutating func digits() -> Int {
            let start = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") {
                position += 1
            }
            return position - start
        }

        /// Takes `byte` if it is next (no white space before it).
        private mutating func take(exactly byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard position + count <= bytes.count,
                memcmp(bytes.baseAddress! + position, word.utf8Start, count) == 0
            else { return false }
            position += count
            return true
        }

        /// Skips white space, then takes `byte` if it is next.
        private mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        private mutating func skipSpace() {
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
                default: return
                }
            }
        }
    }
}
