import ImgfsModel
import ImgfsPipeline
import Testing

@Suite("Callbacks behind a lock")
struct LockedCallbackTests {
    /// The address of a local of the frame that calls this: the same for two calls at the same stack depth.
    @inline(never)
    static func stackAddress() -> UInt {
        var local = 0
        return withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }
    }

    @Test("a callback called 10,000 times is called at the depth of the first call: no thunks pile up on the way")
    func depthStaysTheSame() throws {
        let callback = LockedCallback<Int, UInt>()
        #expect(callback(1) == nil && !callback.isInstalled)
        callback.install { _ in Self.stackAddress() }
        let first = try #require(callback(0))
        for index in 0..<10_000 { _ = callback(index) }
        let last = try #require(callback(0))
        #expect(first == last, "the call went \(first > last ? first - last : 0) bytes deeper")
    }

    @Test("a later install replaces the closure")
    func installReplaces() {
        let callback = LockedCallback<Int, Int>()
        callback.install { $0 + 1 }
        #expect(callback(1) == 2)
        callback.install { $0 * 10 }
        #expect(callback(2) == 20)
    }

    @Test("the open-handle count a repository asks for is as cheap the 10,000th time as the first")
    func openHandleCounterDepth() throws {
        let counter = OpenHandleCounter()
        #expect(counter(try ImageURL("http://127.0.0.1/a.png")) == 0)
        let addresses = Locked<[UInt]>([])
        counter.install { _ in
            addresses.withLock { $0.append(Self.stackAddress()) }
            return 1
        }
        let url = try ImageURL("http://127.0.0.1/a.png")
        for _ in 0..<10_000 { #expect(counter(url) == 1) }
        let seen = addresses.withLock { $0 }
        #expect(seen.count == 10_000 && seen.first == seen.last)
    }
}
