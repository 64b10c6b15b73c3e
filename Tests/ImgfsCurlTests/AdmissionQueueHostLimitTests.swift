import ImgfsCurl
import Testing

/// Issue 18: a policy rule's transfers per host replace `maxPerHost` for its hosts only.
struct AdmissionQueueHostLimitTests {
    @Test("a host with a limit of its own gets that many at once; the others get maxPerHost")
    func hostLimit() {
        var queue = AdmissionQueue<Int>(maxActive: 100, maxPerHost: 3) { $0 < 10 ? 1 : nil }  // items 0..<10 go to slow
        for item in 0..<5 { queue.enqueue(item, host: "http://slow:80") }
        for item in 10..<15 { queue.enqueue(item, host: "http://fast:80") }
        let admitted = queue.admit()
        #expect(admitted.filter { $0.host == "http://slow:80" }.map(\.item) == [0])
        #expect(admitted.filter { $0.host == "http://fast:80" }.map(\.item) == [10, 11, 12])
        queue.finished(host: "http://slow:80")
        #expect(queue.admit().map(\.item) == [1])
    }
}
