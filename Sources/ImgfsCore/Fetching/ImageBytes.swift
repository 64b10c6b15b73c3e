import Foundation

/// The bytes of one image as they arrive: appended by one writer, read concurrently by any number of readers.
///
/// Guarantees: bytes below ``count`` never change or move while the object lives, so a reader may use the buffers
/// handed to ``withSegments(offset:count:_:)`` without a lock; storage grows in segments, never by copying.
public final class ImageBytes: @unchecked Sendable {
    private struct Storage {
        var segments: [UnsafeMutableRawBufferPointer] = []
        /// Bytes written into the last segment.
        var lastUsed = 0
        var count = 0
    }

    private var unsafeStorage = Storage()
    private let lock = NSLock()
    private static let minimumSegment = 64 * 1024
    private static let maximumSegment = 4 * 1024 * 1024

    /// An empty buffer; `expectedCount` (from Content-Length) sizes the first segment so a body of that size is one.
    public init(expectedCount: Int? = nil) {
        if let expectedCount, expectedCount > 0 {
            withStorage { $0.segments.append(.allocate(byteCount: expectedCount, alignment: 16)) }
        }
    }

    /// The complete contents of `bytes`, in one segment.
    public convenience init(copying bytes: some Collection<UInt8>) {
        self.init(expectedCount: bytes.count)
        Array(bytes).withUnsafeBytes { append($0) }
    }

    deinit {
        withStorage { $0.segments.forEach { $0.deallocate() } }
    }

    /// How many bytes have been appended.
    public var count: Int { withStorage { $0.count } }

    /// Appends `bytes`. Only one thread may append.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        var remaining = bytes[...]
        while !remaining.isEmpty {
            let (target, used) = withStorage { state -> (UnsafeMutableRawBufferPointer, Int) in
                if let last = state.segments.last, state.lastUsed < last.count { return (last, state.lastUsed) }
                let size = min(Self.maximumSegment, max(Self.minimumSegment, state.count, remaining.count))
                let segment = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
                state.segments.append(segment)
                state.lastUsed = 0
                return (segment, 0)
            }
            let take = min(target.count - used, remaining.count)
            UnsafeMutableRawBufferPointer(rebasing: target[used..<used + take])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: remaining.prefix(take)))
            remaining = remaining.dropFirst(take)
            withStorage { state in
                state.lastUsed += take
                state.count += take
            }
        }
    }

    /// Calls `body` with the buffers that hold bytes `offset ..< offset + count` (clamped to what has arrived).
    public func withSegments<Result>(offset: Int, count: Int, _ body: ([UnsafeRawBufferPointer]) throws -> Result) rethrows -> Result {
        let pieces = withStorage { state -> [UnsafeRawBufferPointer] in
            var pieces: [UnsafeRawBufferPointer] = []
            var start = 0
            let end = count > state.count - offset ? state.count : offset + count
            for segment in state.segments where start < end {
                let segmentEnd = start + segment.count
                let lower = max(offset, start), upper = min(end, segmentEnd)
                if lower < upper {
                    pieces.append(UnsafeRawBufferPointer(rebasing: segment[(lower - start)..<(upper - start)]))
                }
                start = segmentEnd
            }
            return pieces
        }
        return try body(pieces)
    }

    private func withStorage<Result>(_ body: (inout Storage) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&unsafeStorage)
    }

    /// A copy of bytes `offset ..< offset + count` (clamped), for callers that want an array.
    public func copyBytes(offset: Int = 0, count: Int = .max) -> [UInt8] {
        withSegments(offset: offset, count: count) { pieces in pieces.flatMap { Array($0) } }
    }
}
