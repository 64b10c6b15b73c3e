import Foundation
import ImgfsModel

/// The bytes of one image as they arrive: appended by one writer, read concurrently by any number of readers.
///
/// Guarantees: bytes below ``count`` never change or move while the object lives, so a reader may use the buffers
/// handed to ``withSegments(offset:count:_:)`` without a lock; storage grows in segments, never by copying. With
/// ``FileBackedMemory`` the segments are successive parts of one file, whose descriptor ``completeDescriptor(size:)``
/// hands out once all the bytes are there.
public final class ImageBytes: Sendable {
    private struct Storage {
        var segments: [UnsafeMutableRawBufferPointer] = []
        /// Bytes written into the last segment.
        var lastUsed = 0
        var count = 0
        /// The file the first `mappedSegments` segments belong to (the others are ordinary memory).
        var file: (any FileBackedMemory)?
        var mappedSegments = 0
        /// The file was cut to `count` bytes (`descriptor`: its descriptor, nil if that failed): nothing more is
        /// appended to it.
        var finished = false
        var descriptor: Int32?
    }

    private let storage = Locked(Storage())
    private static let minimumSegment = 64 * 1024
    private static let maximumSegment = 4 * 1024 * 1024

    /// An empty buffer; `expectedCount` (from Content-Length) sizes the first segment so a body of that size is one,
    /// in the memory `memory` chooses for that size.
    public init(expectedCount: Int? = nil, memory: BodyMemory = .ordinary) {
        guard let expectedCount, expectedCount > 0 else { return }
        storage.withLock { state in
            if let file = memory.make(expectedCount: expectedCount), let segment = file.grow(by: expectedCount) {
                state.file = file
                state.segments.append(segment)
                state.mappedSegments = 1
            } else {
                state.segments.append(.allocate(byteCount: expectedCount, alignment: 16))
            }
        }
    }

    /// The complete contents of `bytes`, in one segment.
    public convenience init(copying bytes: some Collection<UInt8>, memory: BodyMemory = .ordinary) {
        self.init(expectedCount: bytes.count, memory: memory)
        Array(bytes).withUnsafeBytes { append($0) }
    }

    deinit {
        // Mapped segments go with the file.
        storage.withLock { $0.segments[$0.mappedSegments...].forEach { $0.deallocate() } }
    }

    /// The descriptor of a file holding exactly these bytes, when they are all `size` of the image and they live in
    /// ``FileBackedMemory``; nil otherwise. The descriptor stays open while this object lives.
    public func completeDescriptor(size: Int) -> Int32? {
        storage.withLock { state in
            guard let file = state.file, state.count == size, state.mappedSegments == state.segments.count else {
                return nil
            }
            if !state.finished {
                state.finished = true
                state.descriptor = file.finish(count: size)
            }
            return state.descriptor
        }
    }

    /// How many bytes have been appended.
    public var count: Int { storage.withLock { $0.count } }

    /// Appends `bytes`. Only one thread may append.
    public func append(_ bytes: UnsafeRawBufferPointer) {
        var remaining = bytes[...]
        while !remaining.isEmpty {
            let (target, used, file, offset) = storage.withLock {
                state -> (UnsafeMutableRawBufferPointer, Int, (any FileBackedMemory)?, Int) in
                // Mapped segments are filled in order and all bytes before the last one's are in full ones, so a byte's
                // offset in the file is its offset in the image.
                let lastIsMapped = state.segments.count == state.mappedSegments
                if let last = state.segments.last, state.lastUsed < last.count {
                    if !state.finished || !lastIsMapped {
                        return (last, state.lastUsed, lastIsMapped ? state.file : nil, state.count)
                    }
                    // A finished file's last part ends at the image's end: readers take segments as full.
                    state.segments[state.segments.count - 1] = UnsafeMutableRawBufferPointer(
                        rebasing: last[..<state.lastUsed])
                }
                let size = min(Self.maximumSegment, max(Self.minimumSegment, state.count, remaining.count))
                let segment: UnsafeMutableRawBufferPointer
                if let file = state.file, !state.finished, state.mappedSegments == state.segments.count,
                    let mapped = file.grow(by: size)
                {
                    segment = mapped
                    state.mappedSegments += 1
                } else {
                    segment = .allocate(byteCount: size, alignment: 16)
                }
                state.segments.append(segment)
                state.lastUsed = 0
                return (segment, 0, state.segments.count == state.mappedSegments ? state.file : nil, state.count)
            }
            let take = min(target.count - used, remaining.count)
            let piece = UnsafeRawBufferPointer(rebasing: remaining.prefix(take))
            if file?.write(piece, at: offset) != true {
                UnsafeMutableRawBufferPointer(rebasing: target[used..<used + take]).copyMemory(from: piece)
            }
            remaining = remaining.dropFirst(take)
            storage.withLock { state in
                state.lastUsed += take
                state.count += take
            }
        }
    }

    /// Calls `body` with the buffers that hold bytes `offset ..< offset + count` (clamped to what has arrived).
    public func withSegments<Result>(
        offset: Int, count: Int, _ body: ([UnsafeRawBufferPointer]) throws -> Result
    ) rethrows -> Result {
        let pieces = storage.withLock { state in
            Self.pieces(of: state.segments[...], offset: offset, count: count, arrived: state.count)
        }
        return try body(pieces)
    }

    /// Lets the pages of the file that hold bytes `offset ..< offset + count` leave the process's memory (see
    /// ``FileBackedMemory/releasePages(_:)``); nothing for bytes in ordinary memory.
    public func releasePages(offset: Int, count: Int) {
        let (file, parts) = storage.withLock { state -> ((any FileBackedMemory)?, [UnsafeRawBufferPointer]) in
            guard let file = state.file else { return (nil, []) }
            let mapped = state.segments[..<state.mappedSegments]
            return (file, Self.pieces(of: mapped, offset: offset, count: count, arrived: state.count))
        }
        parts.forEach { file?.releasePages($0) }
    }

    /// The parts of `segments` (laid end to end from byte 0) that hold bytes `offset ..< offset + count`, clamped to
    /// the `arrived` bytes.
    private static func pieces(
        of segments: ArraySlice<UnsafeMutableRawBufferPointer>, offset: Int, count: Int, arrived: Int
    ) -> [UnsafeRawBufferPointer] {
        var pieces: [UnsafeRawBufferPointer] = []
        var start = 0
        let end = count > arrived - offset ? arrived : offset + count
        for segment in segments where start < end {
            let segmentEnd = start + segment.count
            let lower = max(offset, start), upper = min(end, segmentEnd)
            if lower < upper {
                pieces.append(UnsafeRawBufferPointer(rebasing: segment[(lower - start)..<(upper - start)]))
            }
            start = segmentEnd
        }
        return pieces
    }

    /// A copy of bytes `offset ..< offset + count` (clamped), for callers that want an array.
    public func copyBytes(offset: Int = 0, count: Int = .max) -> [UInt8] {
        withSegments(offset: offset, count: count) { pieces in pieces.flatMap { Array($0) } }
    }
}

// MARK: - BodyMemory

/// Decides which image bodies live in ``FileBackedMemory`` and which in ordinary memory.
public struct BodyMemory: Sendable {
    private let minimumSize: Int
    private let fileBacked: @Sendable (Int) -> (any FileBackedMemory)?

    /// `fileBacked` is asked with the announced size of each body (Content-Length, or the size of a disk entry) when
    /// it is over `minimumSize`, and returns nil for the bodies that should use ordinary memory; smaller bodies always
    /// use ordinary memory.
    public init(
        largerThan minimumSize: Int = 0,
        fileBacked: @escaping @Sendable (_ expectedCount: Int) -> (any FileBackedMemory)?
    ) {
        self.minimumSize = minimumSize
        self.fileBacked = fileBacked
    }

    /// Every body in ordinary memory.
    public static let ordinary = BodyMemory { _ in nil }

    func make(expectedCount: Int?) -> (any FileBackedMemory)? {
        guard let expectedCount, expectedCount > max(minimumSize, 0) else { return nil }
        return fileBacked(expectedCount)
    }
}
