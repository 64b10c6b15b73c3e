import ImgfsModel

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
