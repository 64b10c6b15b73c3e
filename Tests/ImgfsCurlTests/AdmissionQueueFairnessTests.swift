import ImgfsCurl
import ImgfsModel
import Testing

@Suite("Admission queue: fairness across hosts")
struct AdmissionQueueFairnessTests {
    @Test("slow hosts holding every place keep an idle host's waited item out for the starvation delay at most")
    func reserveForIdleHosts() {
        let start = ContinuousClock.now
        var queue = AdmissionQueue<String>(maxActive: 16, maxPerHost: 6, starvation: .seconds(2))
        #expect(queue.reserve == 4)
        for host in ["a", "b", "c"] {
            for index in 0..<6 { queue.enqueue("\(host)\(index)", host: host, now: start) }
        }
        #expect(queue.admit(now: start).count == 16)
        queue.enqueue("fast", host: "d", now: start)
        queue.enqueue("ahead", host: "e", priority: .readAhead, now: start)
        #expect(queue.admit(now: start + .seconds(1)).isEmpty, "before the delay, maxActive holds")
        let later = queue.admit(now: start + .seconds(2))
        #expect(later.map(\.item) == ["fast"], "only a waited item of a host with nothing running")
        #expect(queue.activeCount == 17)
        // The idle-host rule does not let the slow hosts themselves past maxActive.
        #expect(queue.admit(now: start + .seconds(60)).isEmpty)
        #expect(queue.hasWaitedItems, "c's two items still wait")
    }

    @Test("the reserve is bounded: at most maxActive / 4 starved items beyond maxActive")
    func reserveIsBounded() {
        let start = ContinuousClock.now
        var queue = AdmissionQueue<Int>(maxActive: 4, maxPerHost: 4, starvation: .seconds(2))
        for index in 0..<4 { queue.enqueue(index, host: "slow", now: start) }
        #expect(queue.admit(now: start).count == 4)
        for index in 0..<5 { queue.enqueue(100 + index, host: "h\(index)", now: start) }
        #expect(queue.admit(now: start + .seconds(3)).map(\.item) == [100])
        #expect(queue.activeCount == 5)
        #expect(queue.admit(now: start + .seconds(3)).isEmpty, "maxActive + reserve are running")
        queue.finished(host: "slow")
        #expect(queue.admit(now: start + .seconds(3)).map(\.item) == [101])
        #expect(queue.activeCount == 5)
    }
}
