import ImgfsCurl
import Testing

@Suite("Admission queue")
struct AdmissionQueueTests {
    @Test("admits within the total and per-host limits, oldest first")
    func limits() {
        var queue = AdmissionQueue<Int>(maxActive: 3, maxPerHost: 2)
        for item in 0..<5 { queue.enqueue(item, host: "a") }
        queue.enqueue(100, host: "b")
        #expect(queue.admit().map(\.item) == [0, 1, 100])
        #expect(queue.activeCount == 3)
        #expect(queue.admit().isEmpty)
        queue.finished(host: "b")
        #expect(queue.admit().isEmpty, "host a is at its limit of 2")
        queue.finished(host: "a")
        #expect(queue.admit().map(\.item) == [2])
        #expect(queue.waitingCount == 2)
    }

    @Test("a host at its limit does not hold back other hosts")
    func noHeadOfLineBlocking() {
        var queue = AdmissionQueue<String>(maxActive: 16, maxPerHost: 6)
        for index in 0..<20 { queue.enqueue("slow\(index)", host: "slow") }
        #expect(queue.admit().count == 6)
        queue.enqueue("fast", host: "fast")
        #expect(queue.admit().map(\.item) == ["fast"])
    }

    @Test("waiting items can be removed")
    func removal() {
        var queue = AdmissionQueue<Int>(maxActive: 1, maxPerHost: 1)
        for item in 0..<4 { queue.enqueue(item, host: "a") }
        _ = queue.admit()
        #expect(queue.removeWaiting { $0 == 2 } == 2)
        #expect(queue.removeAllWaiting() == [1, 3])
        #expect(queue.waitingCount == 0)
    }
}
