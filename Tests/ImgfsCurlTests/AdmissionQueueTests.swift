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

@Suite("Admission queue priorities")
struct AdmissionQueuePriorityTests {
    @Test("waited before read-ahead before background; FIFO within a class")
    func classes() {
        var queue = AdmissionQueue<String>(maxActive: 1, maxPerHost: 1)
        queue.enqueue("bg1", host: "a", priority: .background)
        queue.enqueue("ra1", host: "a", priority: .readAhead)
        queue.enqueue("bg2", host: "a", priority: .background)
        queue.enqueue("w1", host: "a")
        queue.enqueue("ra2", host: "a", priority: .readAhead)
        queue.enqueue("w2", host: "a", priority: .waited)
        var order: [String] = []
        while queue.waitingCount > 0 {
            order += queue.admit().map(\.item)
            queue.finished(host: "a")
        }
        #expect(order == ["w1", "w2", "ra1", "ra2", "bg1", "bg2"])
    }

    @Test("a waited item of another host is not held back by low-priority items; per-host limits still hold")
    func acrossHosts() {
        var queue = AdmissionQueue<String>(maxActive: 2, maxPerHost: 1)
        for index in 0..<5 { queue.enqueue("bg\(index)", host: "a", priority: .background) }
        queue.enqueue("w", host: "b")
        #expect(queue.admit().map(\.item) == ["w", "bg0"])
    }

    @Test("a promoted item keeps its age in its new class; promotion never lowers")
    func promotion() {
        var queue = AdmissionQueue<String>(maxActive: 1, maxPerHost: 1)
        queue.enqueue("ra1", host: "a", priority: .readAhead)
        queue.enqueue("bg1", host: "a", priority: .background)
        queue.enqueue("w1", host: "a")
        let promoted = queue.promote(where: { $0 == "bg1" }, to: .waited)
        let lowered = queue.promote(where: { $0 == "w1" }, to: .background)
        let absent = queue.promote(where: { $0 == "absent" }, to: .waited)
        #expect(promoted && !lowered && !absent)
        #expect(queue.waitingCount == 3)
        var order: [String] = []
        while queue.waitingCount > 0 {
            order += queue.admit().map(\.item)
            queue.finished(host: "a")
        }
        #expect(order == ["bg1", "w1", "ra1"], "bg1 was enqueued before w1")
    }
}
