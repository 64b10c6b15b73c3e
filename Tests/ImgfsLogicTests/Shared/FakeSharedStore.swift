import Foundation
import ImgfsModel
import ImgfsPipeline
import Synchronization

/// An in-memory ``SharedStoring`` for unit tests: TTLs are recorded, not enforced; `failing` makes every call throw.
final class FakeSharedStore: SharedStoring, Sendable {
    private let values = Mutex<[String: (value: [UInt8], milliseconds: Int)]>([:])
    private let failure = Mutex<SharedStoreError?>(nil)
    private let calls = Mutex(0)

    var failing: SharedStoreError? {
        get { failure.withLock { $0 } }
        set { failure.withLock { $0 = newValue } }
    }

    var callCount: Int { calls.withLock { $0 } }
    var keys: [String] { values.withLock { Array($0.keys) } }
    func value(_ key: String) -> [UInt8]? { values.withLock { $0[key]?.value } }
    func ttl(_ key: String) -> Int? { values.withLock { $0[key]?.milliseconds } }
    func put(_ key: String, _ value: [UInt8]) { values.withLock { $0[key] = (value, 60_000) } }

    private func check() throws(SharedStoreError) {
        calls.withLock { $0 += 1 }
        if let failing { throw failing }
    }

    func get(_ key: String) throws(SharedStoreError) -> [UInt8]? {
        try check()
        return value(key)
    }

    func set(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError) {
        try check()
        values.withLock { $0[key] = (value, milliseconds) }
    }

    func setIfAbsent(_ key: String, _ value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool {
        try check()
        return values.withLock { values in
            guard values[key] == nil else { return false }
            values[key] = (value, milliseconds)
            return true
        }
    }

    func renew(_ key: String, ifValue value: [UInt8], milliseconds: Int) throws(SharedStoreError) -> Bool {
        try check()
        return values.withLock { values in
            guard values[key]?.value == value else { return false }
            values[key]?.milliseconds = milliseconds
            return true
        }
    }

    func delete(_ key: String, ifValue value: [UInt8]) throws(SharedStoreError) {
        try check()
        values.withLock { values in if values[key]?.value == value { values[key] = nil } }
    }
}
