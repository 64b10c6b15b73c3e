import ImgfsCurl
import Testing

/// Issue 20: a host known to multiplex (HTTP/2) is admitted its connection limit times its streams per connection.
struct AdmissionQueueStreamsTests {
    @Test("an HTTP/2 host gets limit × streams at once, within maxActive; back to HTTP/1.1 it gets its limit again")
    func streamsPerConnection() {
        var queue = AdmissionQueue<Int>(maxActive: 10, maxPerHost: 2)
        for item in 0..<20 { queue.enqueue(item, host: "https://h2:443") }
        #expect(queue.admit().count == 2)
        let changed = queue.setStreamsPerConnection(3, host: "https://h2:443")
        let changedAgain = queue.setStreamsPerConnection(3, host: "https://h2:443")
        #expect(changed)
        #expect(!changedAgain, "no change the second time")
        #expect(queue.limit(of: "https://h2:443") == 6)
        #expect(queue.admit().map(\.item) == [2, 3, 4, 5])
        queue.setStreamsPerConnection(100, host: "https://h2:443")
        #expect(queue.admit().count == 4, "maxActive still bounds it")
        #expect(queue.limit(of: "https://other:443") == 2, "other hosts keep their limit")
        queue.setStreamsPerConnection(1, host: "https://h2:443")
        for _ in 0..<8 { queue.finished(host: "https://h2:443") }
        #expect(queue.admit().isEmpty, "two still active: at its limit of 2 again")
        queue.finished(host: "https://h2:443")
        #expect(queue.admit().count == 1)
    }
}
