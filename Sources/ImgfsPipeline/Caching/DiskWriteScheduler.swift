import Foundation
import ImgfsModel
import ImgfsStore
import ImgfsWorkers
import Logging
import Synchronization

/// Writes bodies to the disk cache in the background, one at a time, paced so that storing images just fetched does not
/// take CPU time and memory bandwidth from the fetches and reads around it (docs/DESIGN.md, "Disk-write pacing").
///
/// Guarantees: writes run one at a time, in the order they were queued, on the worker given; the small bodies waiting
/// when one of them may go are written together, in batches whose syncs they share. A write of a body over
/// ``Pacing/yieldSize`` bytes waits, before each step it announces (`pace`), until no request has come for
/// ``Pacing/quietPeriod`` and no transfer runs; a smaller one waits, before it starts, while transfers run, as long as
/// the small bodies waiting add up to at most ``Pacing/holdLimit`` bytes. No write waits longer than
/// ``Pacing/maxDelay`` after it was queued, and during ``flush()`` none waits at all. A write that fails is logged
/// (a full disk at most once a minute) and leaves nothing partial (``DiskCaching/store(_:body:pace:)`` is atomic); a
/// write called off (``cancel(_:)``, ``cancelAll(tier:)``) leaves nothing on the disk, even one under way then.
///
/// The queue is a tier: until its write lands, a queued body is found by ``queuedImage(forKey:tier:)`` (and listed
/// by ``queuedKeys(tier:)``) even after the memory cache evicted it; each ``CacheTiers`` that shares the queue (the
/// images', the variants') finds only the bodies it queued. What the queue holds is bounded (``queueBound``: beyond
/// it a body is not written), and writes stop waiting while it holds more than the memory cache's budget or for 2 s
/// after a purge (``hurry()``).
///
/// The counters are atomics rather than state behind a lock: every request stamps the time, and a lock there would
/// be taken by every FUSE thread at once.
public final class DiskWriteScheduler: Sendable {
    /// When writes wait.
    public struct Pacing: Sendable {
        /// Bodies larger than this wait for a pause in the requests before each step.
        public var yieldSize = 1 << 20
        /// How long no request must have come for a pause.
        public var quietPeriod: TimeInterval = 0.05
        /// The longest a write waits after it was queued (which bounds what waiting writes hold in memory).
        public var maxDelay: TimeInterval = 2
        /// Small bodies wait while transfers run only while those waiting add up to at most this many bytes; 0
        /// writes them at once.
        public var holdLimit = 16 << 20

        /// The defaults above; the daemon sets each from its options.
        public init() {}
    }

    private let worker: any JobRunning
    private let pacing: Pacing
    private let memory: MemoryCache
    private let logger: Logger
    /// The bodies queued, by key, until their write has landed or failed. A dictionary keeps the storage of the most
    /// entries it ever held, so it holds references (one word a slot) and is replaced by an empty one when it empties.
    private let queued = Locked<[String: QueuedWrite]>([:])
    /// Bytes of all queued bodies.
    private let queuedBytes = Atomic<Int>(0)
    /// Until this uptime (ns), queued writes do not wait: set by a purge, so the memory they hold is freed soon.
    private let hurryUntil = Atomic<UInt64>(0)
    /// When a request last came (monotonic nanoseconds).
    private let lastRequest = Atomic<UInt64>(0)
    /// Transfers started and not yet finished.
    private let activeTransfers = Atomic<Int>(0)
    /// Bytes of small bodies queued and not yet written.
    private let heldBytes = Atomic<Int>(0)
    /// Set during ``flush()``: queued writes stop waiting.
    private let flushing = Atomic<Bool>(false)
    /// Small bodies queued and not yet written, in the order they were queued: the first of their jobs to run writes
    /// all of them in batches (``DiskCaching/store(batch:)``) that share the disk cache's syncs, and the jobs of the
    /// others find nothing left to write.
    private let smallWrites = Locked<[QueuedWrite]>([])
    /// When a full disk was last logged (monotonic nanoseconds; 0: never).
    private let lastFullDiskReport = Atomic<UInt64>(0)

    /// How often a write waiting for transfers to end looks again (nanoseconds).
    private static let transferPoll: UInt64 = 5_000_000

    /// A scheduler that writes on `worker`, which must run one job at a time (a one-thread ``WorkerPool``, or a
    /// test's fake), paced by `pacing`; the bodies it holds are bounded by `memory`'s budget.
    public init(worker: any JobRunning, pacing: Pacing, memory: MemoryCache, logger: Logger) {
        self.worker = worker
        self.pacing = pacing
        self.memory = memory
        self.logger = logger
    }

    /// The body `tier` queued for `key`, until its write lands.
    func queuedImage(forKey key: String, tier: ObjectIdentifier) -> CachedImage? {
        queued.withLock { $0[key] }.flatMap { $0.tier == tier ? $0.image : nil }
    }

    /// The keys of the bodies `tier` queued whose writes have not landed.
    func queuedKeys(tier: ObjectIdentifier) -> [String] {
        queued.withLock { $0.compactMap { $0.value.tier == tier ? $0.key : nil } }
    }

    /// Calls off the queued write of `key` (`rm`, a 404, a newer body): it is not written, or, when it was under way,
    /// removed again once it lands.
    func cancel(_ key: String) {
        queued.withLock { writes in
            writes[key] = nil
            if writes.isEmpty { writes = [:] }
        }
    }

    /// Calls off every queued write of `tier` (a purge of its disk cache).
    func cancelAll(tier: ObjectIdentifier) {
        queued.withLock { $0 = $0.filter { $0.value.tier != tier } }
    }

    /// A purge: for the next 2 s queued writes go at once, so the bodies they hold are freed.
    func hurry() {
        hurryUntil.store(DispatchTime.now().uptimeNanoseconds + 2_000_000_000, ordering: .relaxed)
    }

    /// The most bytes the queue holds: the memory cache's budget, or 64 MiB if that is more, unless a memory limit
    /// (a cgroup's) has lowered the budget, which then bounds the queue too.
    var queueBound: Int {
        let budget = memory.budget
        return budget < memory.configuredBudget ? budget : max(budget, 64 << 20)
    }

    /// Whether queued writes must go now: they hold more than the memory cache's budget, or a purge asked.
    private var mustHurry: Bool {
        queuedBytes.load(ordering: .relaxed) > memory.budget
            || DispatchTime.now().uptimeNanoseconds < hurryUntil.load(ordering: .relaxed)
    }

    /// A request came: large writes wait for the next pause.
    func noteRequest() {
        lastRequest.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    func transferStarted() { activeTransfers.add(1, ordering: .relaxed) }
    func transferEnded() { activeTransfers.subtract(1, ordering: .relaxed) }

    /// Queues the write of `image` as the entry `record` of `disk`, for `tier` (whose look-ups find it meanwhile);
    /// `done` runs on the worker once it is written, failed or was called off. Returns false, queueing nothing, when
    /// the queue is full (the disk cannot keep up with the network): the body is then fetched again when next needed,
    /// if it has left memory by then.
    func write(
        _ image: CachedImage, as record: CacheRecord, to disk: any DiskCaching, tier: ObjectIdentifier,
        then done: @escaping @Sendable () -> Void
    ) -> Bool {
        let size = record.size
        let total = queuedBytes.load(ordering: .relaxed)
        guard total == 0 || total + size <= queueBound else { return false }
        let queuedAt = DispatchTime.now().uptimeNanoseconds
        let large = size > pacing.yieldSize
        let held = large || pacing.holdLimit <= 0 ? 0 : size
        heldBytes.add(held, ordering: .relaxed)
        queuedBytes.add(size, ordering: .relaxed)
        let write = QueuedWrite(image: image, record: record, held: held, disk: disk, tier: tier)
        queued.withLock { $0[record.key] = write }
        if !large { smallWrites.withLock { $0.append(write) } }
        worker.submit { [self] in
            if large {
                let pace = { self.waitForQuietMoment(queuedAt: queuedAt) }
                // A large body waits for its first quiet moment before it looks whether it was called off meanwhile.
                pace()
                let stored = isStillQueued(write)
                if stored { store(image.bytes, record, on: disk, pace: pace) }
                finished(write, stored: stored)
            } else {
                if held > 0 { waitForTransfers(queuedAt: queuedAt) }
                storeSmallWrites()
            }
            done()
        }
        return true
    }

    /// A body waiting for its write (a class: the queue's dictionary and batches hold one reference each).
    private final class QueuedWrite: Sendable {
        let image: CachedImage
        let record: CacheRecord
        /// What it counts in ``heldBytes``.
        let held: Int
        let disk: any DiskCaching
        /// The ``CacheTiers`` that queued it.
        let tier: ObjectIdentifier

        init(image: CachedImage, record: CacheRecord, held: Int, disk: any DiskCaching, tier: ObjectIdentifier) {
            self.image = image
            self.record = record
            self.held = held
            self.disk = disk
            self.tier = tier
        }
    }

    /// The most bodies, and bytes, one batch writes.
    private static let batchLimits = (count: 256, bytes: 8 << 20)

    private func isStillQueued(_ write: QueuedWrite) -> Bool {
        queued.withLock { $0[write.record.key]?.image.bytes === write.image.bytes }
    }

    /// A write landed, failed or was called off: it leaves the queue and its counts. One `stored` while it was called
    /// off (`rm`, a purge: their removal from the disk may have come first) is removed from the disk again, unless a
    /// newer body of its key is queued.
    private func finished(_ write: QueuedWrite, stored: Bool) {
        heldBytes.subtract(write.held, ordering: .relaxed)
        queuedBytes.subtract(write.record.size, ordering: .relaxed)
        let calledOff = queued.withLock { writes -> Bool in
            guard let current = writes[write.record.key] else { return true }
            if current.image.bytes === write.image.bytes {
                writes[write.record.key] = nil
                if writes.isEmpty { writes = [:] }
            }
            return false
        }
        if calledOff && stored { write.disk.remove(key: write.record.key) }
    }

    /// Writes every small body waiting, in batches of the same disk cache within ``batchLimits``.
    private func storeSmallWrites() {
        let writes = smallWrites.withLock { waiting in
            defer { waiting.removeAll() }
            return waiting
        }
        var batch: [QueuedWrite] = []
        var bytes = 0
        var stored = [Bool](repeating: false, count: writes.count)
        for (index, write) in writes.enumerated() where isStillQueued(write) {
            stored[index] = true
            if let first = batch.first,
                (write.disk as AnyObject) !== (first.disk as AnyObject) || batch.count == Self.batchLimits.count
                    || bytes + write.record.size > Self.batchLimits.bytes
            {
                storeBatch(batch)
                batch.removeAll()
                bytes = 0
            }
            batch.append(write)
            bytes += write.record.size
        }
        if !batch.isEmpty { storeBatch(batch) }
        for (write, stored) in zip(writes, stored) { finished(write, stored: stored) }
    }

    /// One ``DiskCaching/store(batch:)`` of `writes` (all to the same disk cache), from one copy of their bodies.
    private func storeBatch(_ writes: [QueuedWrite]) {
        var bodies: [UInt8] = []
        bodies.reserveCapacity(writes.reduce(0) { $0 + $1.record.size })
        for write in writes {
            write.image.bytes.withSegments(offset: 0, count: write.record.size) { pieces in
                for piece in pieces { bodies.append(contentsOf: piece) }
            }
            write.image.bytes.releasePages(offset: 0, count: write.record.size)
        }
        let results = bodies.withUnsafeBytes { all in
            var offset = 0
            let batch = writes.map { write in
                defer { offset += write.record.size }
                return (
                    record: write.record,
                    body: UnsafeRawBufferPointer(rebasing: all[offset..<offset + write.record.size])
                )
            }
            return writes[0].disk.store(batch: batch)
        }
        for (write, result) in zip(writes, results) {
            if case .failure(let error) = result { report(error, storing: write.record) }
        }
    }

    private func store(_ bytes: ImageBytes, _ record: CacheRecord, on disk: any DiskCaching, pace: () -> Void) {
        do {
            try bytes.withSegments(offset: 0, count: record.size) { pieces in
                if pieces.count == 1 {
                    try disk.store(record, body: pieces[0], pace: pace)
                } else {
                    let whole = pieces.flatMap { Array($0) }
                    try whole.withUnsafeBytes { _ = try disk.store(record, body: $0, pace: pace) }
                }
            }
        } catch {
            report(error, storing: record)
        }
        // Read to be written: a body in a file need not stay mapped into imgfs for it.
        bytes.releasePages(offset: 0, count: record.size)
    }

    /// Logs a failed write: a full disk at most once a minute, anything else each time.
    private func report(_ error: any Error, storing record: CacheRecord) {
        switch error {
        case DiskCacheError.noSpace:
            let now = DispatchTime.now().uptimeNanoseconds
            let last = lastFullDiskReport.load(ordering: .relaxed)
            guard last == 0 || now &- last >= 60_000_000_000 else { return }
            lastFullDiskReport.store(now, ordering: .relaxed)
            logger.error(
                """
                disk cache: no space left on device (ENOSPC); serving from memory and the network, nothing partial \
                is kept (reported once a minute)
                """)
        default:
            logger.warning("could not write the disk cache: \(error)", metadata: ["url": "\(record.url)"])
        }
    }

    /// Waits until every write queued so far has finished (at unmount, so nothing fetched is lost); writes that were
    /// waiting for a pause or for transfers to end go at once.
    func flush() {
        flushing.store(true, ordering: .relaxed)
        worker.drain()
        flushing.store(false, ordering: .relaxed)
    }

    /// Before each step of a large body: until no request has come for the quiet period and no transfer runs
    /// (readers waiting for a transfer's bytes make no requests meanwhile). Large images just fetched are often read
    /// again at once, and writing tens of megabytes competes with those reads for memory bandwidth. Small bodies do
    /// not wait for a pause (holding them back while reads came left the CPUs idle between requests, and in a VM
    /// waking an idle CPU made every small-file request slower), only for running transfers.
    private func waitForQuietMoment(queuedAt: UInt64) {
        let quiet = UInt64(max(0, pacing.quietPeriod) * 1e9)
        waitWhileBusy(queuedAt: queuedAt) {
            let now = DispatchTime.now().uptimeNanoseconds
            let idle = now &- min(now, lastRequest.load(ordering: .relaxed))
            if idle < quiet { return quiet - idle }
            return activeTransfers.load(ordering: .relaxed) > 0 ? Self.transferPoll : nil
        }
    }

    /// Before a small body: while transfers run, as long as the small bodies waiting stay within the hold limit.
    /// During a burst of fetches the writes (file creates, renames, fsyncs: a quarter of the daemon's CPU) would take
    /// CPU time from the fetches and the readers; they follow the burst.
    private func waitForTransfers(queuedAt: UInt64) {
        waitWhileBusy(queuedAt: queuedAt) {
            activeTransfers.load(ordering: .relaxed) > 0
                && heldBytes.load(ordering: .relaxed) <= pacing.holdLimit ? Self.transferPoll : nil
        }
    }

    /// The waiting both rules share: sleeps for as long as `busy` says (nanoseconds; nil: the write may go), until the
    /// maximum delay after `queuedAt` or until a flush begins.
    private func waitWhileBusy(queuedAt: UInt64, _ busy: () -> UInt64?) {
        let deadline = queuedAt &+ UInt64(max(0, pacing.maxDelay) * 1e9)
        while !flushing.load(ordering: .relaxed), !mustHurry, let pause = busy() {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else { return }
            Thread.sleep(forTimeInterval: Double(min(pause, deadline - now)) / 1e9)
        }
    }
}
