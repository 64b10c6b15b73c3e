import Foundation
import ImgfsModel
import Synchronization

/// One transfer of one URL, observed by any number of waiting readers.
///
/// Guarantees: every waiter is answered exactly once, without the lock held; a read is answered as soon as its range
/// has arrived (streaming), with the bytes clamped to the image's end; once the download fails every waiter gets the
/// error, also readers of ranges that had arrived before (a partial body is never handed out as a whole one); a body
/// shorter than its Content-Length is a failure; a body that starts again (a retry that could not resume) replaces
/// the bytes held only when no reader had any of them, and otherwise must repeat them exactly (never a mix).
/// A probe (``probeLimit``) that ended after its first bytes keeps them, with the size and validators, and is neither
/// complete nor failed: its size answers stats, reads past its bytes wait, and the first caller that wants the rest
/// (``wantRest()``) has it fetched from there, once; until that answer is decided (the continuation's first byte, or a
/// new whole body) the size is withheld, so nobody is told the size of one version and given the bytes of another.
/// Whoever wanted the rest while the probe was under way may have been told its size already: a new version of another
/// size then fails the download (``FetchError/changed(_:)``) rather than be served. A lookup's probe
/// (``pausesAtProbe``) is a whole GET whose fetcher ends it after the probe's bytes unless the rest is wanted
/// (``wantsRest``) in time: then it simply goes on in the body sized for the whole image it had from its head on (a
/// lookup's probe that ends keeps its bytes in a buffer of their size).
public final class Download: TransferObserving, Sendable {
    /// Answers a metadata waiter: the image's metadata once the head has arrived, or why the download failed.
    public typealias MetadataReply = @Sendable (Result<ImageMetadata, FetchError>) -> Void
    /// Answers a reader: its range of the body once it has arrived, or why the download failed.
    public typealias ReadReply = @Sendable (Result<ImageSlice, FetchError>) -> Void

    /// Where the transfer is.
    public enum Phase: Equatable, Sendable {
        case waitingForHead
        case receiving
        case complete
        case failed(FetchError, at: ContinuousClock.Instant)
    }

    private struct RangeWaiter {
        let offset: Int
        let count: Int
        let interest: Interest?
        let reply: ReadReply
        /// The bytes go to a reader of the file (not to a look at the first bytes: ``read(offset:count:interest:
        /// servesReader:_:)``), so a body that starts over must repeat them.
        var servesReader = true
    }

    private struct State {
        var phase = Phase.waitingForHead
        var head: ResponseHead?
        var headReceivedAt = Date()
        /// The fetch time reported instead of ``headReceivedAt`` (a refetch that looks like the cached copy).
        var keptFetchTime: Date?
        var bytes = ImageBytes()
        var received = 0
        var metadataWaiters: [MetadataReply] = []
        var metadataInterests: [Interest?] = []
        var handle: (any TransferHandle)?
        var rangeWaiters: [RangeWaiter] = []
        var finishHandlers: [@Sendable (FetchError?) -> Void] = []
        /// How many of the finish handlers stand for someone waiting for the whole body (a variant's original).
        var bodyWaiters = 0
        var headWaiters: [@Sendable (Result<ResponseHead, FetchError>) -> Void] = []
        /// Whether the first bytes were checked to be an image (or need not be).
        var verified = false
        /// Whether any body byte was handed to a reader (a restarted body must then repeat them exactly).
        var served = false
        /// After a restart with bytes served: the first `replayLimit` bytes of the new body are compared with those
        /// held (`replayed` of them so far), not appended.
        var replayLimit = 0
        var replayed = 0
        /// A probe that ended after its first bytes: no transfer runs, the rest is not fetched yet.
        var probed = false
        /// Someone wants the whole body (a probe is continued once it ends).
        var restWanted = false
        /// A continuation was started and its answer is not decided yet (the size is withheld meanwhile).
        var continuing = false
        /// The continuation has been started (once per probe).
        var continued = false
        /// Someone wanted the rest while the probe was under way, and so may have been told the probe's size (an
        /// open): a continuation that finds another size then fails the download rather than serve a body of a size
        /// that open was not told.
        var sizePromised = false
        /// The body is held in a buffer sized for the probe's bytes only (moved to a whole one if the rest is wanted).
        var probeSized = false
    }

    /// What the repository does for a probe: start the rest, and hear that a probe ended or a new body replaced it.
    public struct ProbeHandlers: Sendable {
        /// Starts the GET of the rest of the body after `offset` bytes of the answer with `head`.
        public var continueAfter:
            @Sendable (_ download: Download, _ head: ResponseHead, _ offset: Int) -> any TransferHandle
        /// The probe ended after its first bytes (the download now waits for someone to want the rest).
        public var probed: @Sendable () -> Void
        /// The continuation got a new whole body (the image changed since the probe): said before its size is, on the
        /// fetch thread; `readsWaiting`: reads of the image wait for its bytes (from that thread).
        public var replaced: @Sendable (_ readsWaiting: Bool) -> Void

        /// The three handlers.
        public init(
            continueAfter:
                @escaping @Sendable (_ download: Download, _ head: ResponseHead, _ offset: Int) ->
                any TransferHandle,
            probed: @escaping @Sendable () -> Void, replaced: @escaping @Sendable (_ readsWaiting: Bool) -> Void
        ) {
            self.continueAfter = continueAfter
            self.probed = probed
            self.replaced = replaced
        }
    }

    /// What a body must satisfy to be served.
    public struct Limits: Sendable {
        /// The largest body accepted (`--max-size`).
        public var maxSize = 64 << 20
        /// Whether the body must start with a known image signature (off with `--allow-any-type`).
        public var requireImage = true

        /// Limits of `maxSize` bytes, checking the image signature when `requireImage`.
        public init(maxSize: Int = 64 << 20, requireImage: Bool = true) {
            self.maxSize = maxSize
            self.requireImage = requireImage
        }
    }

    /// The URL being fetched.
    public let url: ImageURL
    /// The request rules it was started under (its host's max size and expiry come from them).
    public let rules: RequestRules
    /// What the body must satisfy.
    public let limits: Limits
    private let state = Locked(State())

    /// Where bodies are kept (file-backed for the sizes it chooses).
    public let memory: BodyMemory

    /// Whether something outside the download holds on to it (a file handle open on its image).
    private let isHeld: @Sendable () -> Bool

    /// For a probe: how many first bytes it asks for (the fetcher stops there); nil for a whole download.
    public let probeLimit: Int?
    /// A lookup's probe: a whole GET that the fetcher ends after ``probeLimit`` bytes unless the rest is wanted in time
    /// (``FetchRequest/pausesAtProbe``).
    public let pausesAtProbe: Bool
    private let probeHandlers = Locked<ProbeHandlers?>(nil)

    /// A download of `url` with no waiters yet; nothing is fetched until a fetcher reports to it. With `probeLimit`,
    /// the transfer is a probe of that many first bytes (with `pausesAtProbe`, a lookup's: a whole GET that stops there
    /// unless the rest is wanted in time).
    public init(
        url: ImageURL, rules: RequestRules = .empty, limits: Limits = Limits(), memory: BodyMemory = .ordinary,
        probeLimit: Int? = nil, pausesAtProbe: Bool = false, isHeld: @escaping @Sendable () -> Bool = { false }
    ) {
        self.url = url
        self.probeLimit = probeLimit
        self.pausesAtProbe = pausesAtProbe && probeLimit != nil
        self.isHeld = isHeld
        self.rules = rules
        self.limits = rules.limits(for: url.host, default: limits)  // a policy rule may set its host's max size
        self.memory = memory
    }

    // MARK: - What readers see

    /// The current phase.
    public var phase: Phase { state.withLock { $0.phase } }

    /// The metadata if the size is known now, without waiting.
    public var currentMetadata: ImageMetadata? { state.withLock { Self.metadata(of: $0) } }

    /// From now on the metadata reports `date` as the fetch time (``ImageRepository/keptFetchTime(_:_:_:)``).
    func keepFetchTime(_ date: Date) { state.withLock { $0.keptFetchTime = date } }

    /// The bytes of a complete download, else nil.
    public var completeBytes: ImageBytes? { state.withLock { $0.phase == .complete ? $0.bytes : nil } }

    /// All the bytes of the body once they have arrived and been checked (the same bytes reads are served), even
    /// before the transfer has reported its end; else nil.
    public var arrivedBody: ImageSlice? {
        state.withLock { state in
            guard let size = Self.metadata(of: state)?.size, state.received == size else { return nil }
            if case .failed = state.phase { return nil }
            state.served = true
            return ImageSlice(bytes: state.bytes, offset: 0, count: size)
        }
    }

    /// Answers once the size is known (Content-Length, else the end of the body) or the download failed.
    public func whenMetadataKnown(interest: Interest? = nil, _ reply: @escaping MetadataReply) {
        let answer: Result<ImageMetadata, FetchError>? = state.withLock { state in
            if case .failed(let error, _) = state.phase { return .failure(error) }
            if let metadata = Self.metadata(of: state) { return .success(metadata) }
            state.metadataWaiters.append(reply)
            state.metadataInterests.append(interest)
            return nil
        }
        if let answer { reply(answer) }
    }

    /// Answers with bytes `offset ..< offset + count` once they arrived (fewer at the end of the image), or the error.
    /// Unless `servesReader` is false (the first bytes read for what they tell of the image, not for a reader of the
    /// file), a body that starts over must then repeat them; without a reader, a new version replaces them.
    public func read(
        offset: Int, count: Int, interest: Interest? = nil, servesReader: Bool = true, _ reply: @escaping ReadReply
    ) {
        let answer: Result<ImageSlice, FetchError>? = state.withLock { state in
            if case .failed(let error, _) = state.phase { return .failure(error) }
            if let slice = Self.slice(of: state, offset: offset, count: count) {
                state.served = state.served || (servesReader && slice.count > 0)
                return .success(slice)
            }
            state.rangeWaiters.append(
                RangeWaiter(
                    offset: offset, count: count, interest: interest, reply: reply, servesReader: servesReader))
            return nil
        }
        if let answer { reply(answer) }
    }

    /// Answers with the response head once it arrived (a 2xx, or a 304 for a revalidation), or with the error.
    public func whenHeadKnown(_ reply: @escaping @Sendable (Result<ResponseHead, FetchError>) -> Void) {
        let answer: Result<ResponseHead, FetchError>? = state.withLock { state in
            if case .failed(let error, _) = state.phase { return .failure(error) }
            if let head = state.head { return .success(head) }
            state.headWaiters.append(reply)
            return nil
        }
        if let answer { reply(answer) }
    }

    /// Raises the transfer's admission priority (a waiting reader joined a read-ahead or background transfer).
    public func promote(to priority: FetchPriority) { state.withLock { $0.handle }?.promote(to: priority) }

    /// Remembers how to call the transfer off (see ``cancelIfAbandoned()``).
    public func attach(_ handle: any TransferHandle) {
        state.withLock { $0.handle = handle }
    }

    /// Calls the transfer off when nobody wants it any more: no file handle is open on it (`openHandles`), nobody
    /// waits for its size (every such request was interrupted), and less than half of its announced size has arrived
    /// (nothing at all, when no size was announced). Reads still pending then are the kernel's readahead for files
    /// already closed. `beforeCancelling` runs just before the transfer is called off. Returns whether it called the
    /// transfer off.
    @discardableResult
    public func cancelIfAbandoned(openHandles: Int, beforeCancelling: () -> Void = {}) -> Bool {
        guard openHandles == 0 else { return false }
        let handle = state.withLock { state -> (any TransferHandle)? in
            switch state.phase {
            case .complete, .failed: return nil
            case .waitingForHead, .receiving: break
            }
            guard state.metadataInterests.allSatisfy({ $0?.isWithdrawn == true }) else { return nil }
            let length = state.head?.contentLength
            let lessThanHalf = length.map { state.received * 2 < $0 } ?? (state.received == 0)
            return lessThanHalf ? state.handle : nil
        }
        guard let handle else { return false }
        beforeCancelling()
        handle.cancel()
        return true
    }

    /// The response head, if it has arrived.
    public var head: ResponseHead? { state.withLock { $0.head } }

    /// Whether anyone waits for the transfer: a stat or read not yet answered (and not interrupted), someone waiting
    /// for the whole body (``whenFinished(waiting:_:)``), or a file handle open on the image. A transfer started by a
    /// lookup or a stat that has had its answer is wanted by nobody.
    public var isWanted: Bool {
        let waiting = state.withLock { state in
            state.bodyWaiters > 0 || state.metadataInterests.contains { $0?.isWithdrawn != true }
                || state.rangeWaiters.contains { $0.interest?.isWithdrawn != true }
        }
        return waiting || isHeld()
    }

    /// Calls `handler` once the transfer has ended: with nil when the body is complete, else with the error. With
    /// `waiting`, the handler stands for someone who waits for the whole body: the transfer is wanted until it ends.
    public func whenFinished(waiting: Bool = false, _ handler: @escaping @Sendable (FetchError?) -> Void) {
        if waiting { wantRest() }
        let ended: FetchError?? = state.withLock { state in
            switch state.phase {
            case .complete: return .some(nil)
            case .failed(let error, _): return .some(error)
            case .waitingForHead, .receiving:
                state.finishHandlers.append(handler)
                if waiting { state.bodyWaiters += 1 }
                return nil
            }
        }
        if let ended { handler(ended) }
    }

    // MARK: - TransferObserving

    /// Takes the response head: answers the metadata waiters, or fails the download (false) when the head breaks the
    /// limits or a reader's earlier bytes.
    @discardableResult
    public func transferDidReceive(head: ResponseHead) -> Bool {
        if !head.isNotModified, let length = head.contentLength, length > limits.maxSize {
            transferDidComplete(error: .tooLarge(size: length, limit: limits.maxSize))
            return false
        }
        let (headWaiters, metadataWaiters, metadata) = state.withLock {
            state -> ([@Sendable (Result<ResponseHead, FetchError>) -> Void], [MetadataReply], ImageMetadata?) in
            state.head = head
            state.headReceivedAt = Date()
            state.phase = .receiving
            // A lookup's probe is kept in a body sized for the whole image from its head on (an open usually joins
            // it, and finds that body, which the kernel can read by itself); it shrinks if it ends as a probe.
            let probeLimit = pausesAtProbe ? nil : probeLimit
            state.bytes = Self.body(for: head, probeLimit: probeLimit, memory: memory)
            state.probeSized = probeLimit != nil && !head.isNotModified && (head.contentLength ?? 0) > probeLimit!
            state.verified = !limits.requireImage || head.isNotModified
            defer { state.headWaiters.removeAll() }
            guard let metadata = Self.metadata(of: state) else { return (state.headWaiters, [], nil) }
            defer {
                state.metadataWaiters.removeAll()
                state.metadataInterests.removeAll()
            }
            return (state.headWaiters, state.metadataWaiters, metadata)
        }
        headWaiters.forEach { $0(.success(head)) }
        if let metadata { metadataWaiters.forEach { $0(.success(metadata)) } }
        return true
    }

    /// Takes a body that starts again from byte 0; false (and failed) when a reader already had bytes of the first one
    /// that the new head cannot repeat.
    public func transferDidRestart(head: ResponseHead) -> Bool {
        let (refusal, replaced, readsWaiting) = state.withLock { state -> (FetchError??, Bool, Bool) in
            if case .failed = state.phase { return (.some(nil), false, false) }
            let same = state.head.map { $0.contentLength == head.contentLength && Self.sameVersion($0, head) } ?? false
            if state.continuing && !same && state.sizePromised && head.contentLength != state.head?.contentLength {
                // An open was told the probe's size: the new version's other size would read short or cut off.
                state.continuing = false
                let sizes = [state.head?.contentLength, head.contentLength].map { $0.map(String.init) ?? "unknown" }
                return (
                    .changed("it changed after an open was told its size: \(sizes[0]), now \(sizes[1]) bytes"),
                    false, false
                )
            }
            if state.continuing && !state.served && !same {
                // The image changed since the probe: its new body, whole (a server that ignores Range sends the same
                // version again from byte 0, which goes on below as a retry's restart would).
                state.continuing = false
                state.head = head
                state.headReceivedAt = Date()
                state.probeSized = false
                state.bytes = ImageBytes(expectedCount: head.contentLength, memory: memory)
                state.received = 0
                state.verified = !limits.requireImage
                return (nil, true, !state.rangeWaiters.isEmpty)
            }
            state.continuing = false
            guard head.contentLength == state.head?.contentLength else {
                let sizes = [state.head?.contentLength, head.contentLength].map { $0.map(String.init) ?? "unknown" }
                return (.changed("its size went from \(sizes[0]) to \(sizes[1]) bytes"), false, false)
            }
            state.head = head
            if state.served {
                state.replayLimit = state.received
                state.replayed = 0
            } else {
                state.probeSized = false
                state.bytes = ImageBytes(expectedCount: head.contentLength, memory: memory)
                state.received = 0
                state.verified = !limits.requireImage
            }
            return (nil, false, false)
        }
        if replaced { probeHandlers.withLock { $0 }?.replaced(readsWaiting) }
        if let refusal {
            if let refusal { transferDidComplete(error: refusal) }
            return false
        }
        return true
    }

    /// Appends body bytes and answers the reads they cover; false (and failed) when the body passes the size limit, is
    /// not an image, or differs from bytes already handed out.
    @discardableResult
    public func transferDidReceive(bytes: UnsafeRawBufferPointer) -> Bool {
        let (buffer, alreadyFailed, replayed, replay) = state.withLock { state in
            if case .failed = state.phase { return (state.bytes, true, 0, 0) }
            // A lookup's probe an open joined goes on whole: its bytes move here, on the only thread that appends. So
            // does one whose fetcher did not stop at the probe's bytes (a tier that hands over whole bodies).
            if state.probeSized,
                state.restWanted || state.received > (probeLimit ?? .max) - bytes.count
            {
                Self.moveToWholeBody(&state, memory: memory)
            }
            return (state.bytes, false, state.replayed, state.replayLimit - state.replayed)
        }
        guard !alreadyFailed else { return false }
        var bytes = bytes
        if replay > 0 {
            // A restarted body must repeat the bytes readers already had.
            let count = min(replay, bytes.count)
            guard buffer.copyBytes(offset: replayed, count: count).elementsEqual(bytes.prefix(count)) else {
                transferDidComplete(error: .changed("the new answer differs in bytes readers already had"))
                return false
            }
            state.withLock { $0.replayed += count }
            bytes = UnsafeRawBufferPointer(rebasing: bytes[count...])
            if bytes.isEmpty { return true }
        }
        guard buffer.count + bytes.count <= limits.maxSize else {
            transferDidComplete(error: .tooLarge(size: nil, limit: limits.maxSize))
            return false
        }
        buffer.append(bytes)
        let (ready, metadataWaiters, metadata, rejection) = state.withLock {
            state -> ([(RangeWaiter, ImageSlice)], [MetadataReply], ImageMetadata?, FetchError?) in
            state.received = buffer.count
            var justVerified = state.continuing  // a continuation's first byte: the size is known again
            state.continuing = false
            if !state.verified && state.received >= ImageSignature.bytesNeeded {
                if let rejection = Self.signatureRejection(buffer) { return ([], [], nil, rejection) }
                state.verified = true
                justVerified = true
            }
            guard justVerified, let metadata = Self.metadata(of: state) else {
                return (Self.takeSatisfiedWaiters(&state), [], nil, nil)
            }
            defer {
                state.metadataWaiters.removeAll()
                state.metadataInterests.removeAll()
            }
            return (Self.takeSatisfiedWaiters(&state), state.metadataWaiters, metadata, nil)
        }
        if let rejection {
            transferDidComplete(error: rejection)
            return false
        }
        if let metadata { metadataWaiters.forEach { $0(.success(metadata)) } }
        ready.forEach { waiter, slice in waiter.reply(.success(slice)) }
        return true
    }

    /// Ends the download: a complete body serves every waiter; an error, or a body shorter than announced, fails them.
    public func transferDidComplete(error: FetchError?) {
        let ended = state.withLock { state -> Bool in
            switch state.phase {
            case .complete, .failed: return true
            case .waitingForHead, .receiving: return false
            }
        }
        guard !ended, !probeEnded(error: error) else { return }
        let (metadataWaiters, rangeWaiters, finishHandlers, headWaiters, outcome) = state.withLock {
            state -> (
                [MetadataReply], [RangeWaiter], [@Sendable (FetchError?) -> Void],
                [@Sendable (Result<ResponseHead, FetchError>) -> Void], Result<ImageMetadata, FetchError>
            ) in
            var failure = error
            if failure == nil, state.head?.isNotModified == false, let expected = state.head?.contentLength,
                expected != state.received
            {
                failure = .truncated(expected: expected, received: state.received)
            }
            if failure == nil && state.head == nil { failure = .transport("the response ended before its header") }
            if failure == nil && state.replayed < state.replayLimit {
                failure = .changed("the new answer is shorter than the bytes readers already had")
            }
            if failure == nil && !state.verified {
                failure = Self.signatureRejection(state.bytes)
                state.verified = failure == nil
            }
            if let failure {
                state.phase = .failed(failure, at: .now)
                state.bytes = ImageBytes()
            } else {
                state.phase = .complete
            }
            state.probed = false
            defer {
                state.metadataWaiters.removeAll()
                state.metadataInterests.removeAll()
                state.handle = nil
                state.rangeWaiters.removeAll()
                state.finishHandlers.removeAll()
                state.bodyWaiters = 0
                state.headWaiters.removeAll()
            }
            let outcome: Result<ImageMetadata, FetchError> =
                failure.map { .failure($0) } ?? .success(Self.metadata(of: state)!)
            return (
                state.metadataWaiters, state.rangeWaiters, state.finishHandlers,
                failure == nil ? [] : state.headWaiters, outcome
            )
        }
        // Finish handlers (the caches' bookkeeping and its log lines) run before any waiter is woken.
        finishHandlers.forEach { handler in
            if case .failure(let error) = outcome { handler(error) } else { handler(nil) }
        }
        if case .failure(let error) = outcome { headWaiters.forEach { $0(.failure(error)) } }
        metadataWaiters.forEach { $0(outcome) }
        for waiter in rangeWaiters {
            switch outcome {
            case .failure(let error): waiter.reply(.failure(error))
            case .success: read(offset: waiter.offset, count: waiter.count, waiter.reply)
            }
        }
    }

    // MARK: - Probes

    /// Installs what the repository does for this probe (before its transfer starts).
    public func install(_ handlers: ProbeHandlers) {
        probeHandlers.withLock { $0 = handlers }
    }

    /// Whether it is a probe that ended after its first bytes and nobody has wanted the rest since.
    public var isProbed: Bool { state.withLock { $0.probed && !$0.restWanted } }

    /// Whether someone wants the whole body (``wantRest()``): a lookup's probe then goes on (asked by the fetcher).
    public var wantsRest: Bool { state.withLock { $0.restWanted } }

    /// Up to `count` first bytes of a probe that ended after its first bytes (kept, nobody wanted the rest yet), else
    /// nil.
    public func probedFirstBytes(count: Int) -> [UInt8]? {
        state.withLock { state in
            guard state.probed else { return nil }
            return state.bytes.copyBytes(offset: 0, count: min(count, state.received))
        }
    }

    /// Someone wants the whole body: a probe is continued where it stopped (at once if it has, else when it does), a
    /// lookup's probe under way goes on (its fetcher is told, in case it paused); nothing happens for a download that
    /// is not a probe.
    public func wantRest() {
        guard probeLimit != nil else { return }
        let (start, handle) = state.withLock { state -> ((ResponseHead, Int)?, (any TransferHandle)?) in
            var underWay = false
            switch state.phase {
            case .waitingForHead, .receiving:
                // Under way (not yet ended after its first bytes, nor continued): the asker may be told its size.
                state.sizePromised = state.sizePromised || (!state.continued && !state.probed)
                underWay = !state.probed
            case .complete, .failed: break
            }
            let first = !state.restWanted
            state.restWanted = true
            return (Self.takeContinuation(&state, memory: memory), first && underWay ? state.handle : nil)
        }
        if pausesAtProbe { handle?.restWanted() }
        if let start { continueAfter(start) }
    }

    /// Drops a probe that ended after its first bytes, when nobody has wanted the rest (it fails as cancelled, so its
    /// flight ends); returns whether it did.
    @discardableResult
    public func dropProbe() -> Bool {
        let drop = state.withLock { state -> Bool in
            guard state.probed && !state.restWanted else { return false }
            state.probed = false
            return true
        }
        if drop { transferDidComplete(error: .cancelled) }
        return drop
    }

    /// A probe's transfer ended without error after its first bytes: keeps them and waits for someone to want the
    /// rest (continuing at once when someone already does). False when this is no such end.
    private func probeEnded(error: FetchError?) -> Bool {
        guard probeLimit != nil, error == nil else { return false }
        let (ended, start) = state.withLock { state -> (Bool, (ResponseHead, Int)?) in
            guard let head = state.head, !head.isNotModified, let size = head.contentLength, state.verified,
                state.received > 0, state.received < size, !state.continuing, state.replayLimit == 0
            else { return (false, nil) }
            state.probed = true
            state.handle = nil
            if !state.restWanted && !state.probeSized { Self.moveToProbeSizedBody(&state, limit: probeLimit) }
            return (true, Self.takeContinuation(&state, memory: memory))
        }
        guard ended else { return false }
        if let start {
            continueAfter(start)
        } else {
            probeHandlers.withLock { $0 }?.probed()
        }
        return true
    }

    /// Starts the continuation outside the lock.
    private func continueAfter(_ start: (head: ResponseHead, offset: Int)) {
        guard let handlers = probeHandlers.withLock({ $0 }) else {
            return transferDidComplete(error: .transport("a probe cannot be continued"))
        }
        attach(handlers.continueAfter(self, start.head, start.offset))
    }

    // MARK: - Helpers (lock held)

    /// The continuation to start now, if the probe has ended and someone wants the rest: the probed bytes move to a
    /// body sized for the whole image (in the memory it would have had), and the size is withheld until the
    /// continuation's answer is decided.
    private static func takeContinuation(_ state: inout State, memory: BodyMemory) -> (ResponseHead, Int)? {
        guard state.probed, state.restWanted, state.head != nil else { return nil }
        state.probed = false
        state.continuing = true
        state.continued = true
        state.phase = .receiving
        moveToWholeBody(&state, memory: memory)
        return (state.head!, state.received)
    }

    /// Moves the bytes received so far to a body sized for the whole image, in the memory it would have had (readers
    /// keep the slices they were given of the old one).
    private static func moveToWholeBody(_ state: inout State, memory: BodyMemory) {
        moveBody(&state, to: ImageBytes(expectedCount: state.head?.contentLength, memory: memory), probeSized: false)
    }

    /// A lookup's probe that ended after its first bytes: they move to ordinary memory of their size (the transfer
    /// has ended, nothing appends any more), so a stat holds no more than the probe's bytes.
    private static func moveToProbeSizedBody(_ state: inout State, limit: Int?) {
        // A lookup's probe that went on past its first bytes for an open that did not come keeps only those.
        state.received = min(state.received, limit ?? .max)
        moveBody(&state, to: ImageBytes(expectedCount: state.received), probeSized: true)
    }

    /// Copies the bytes received so far into `body`, which holds them from now on.
    private static func moveBody(_ state: inout State, to body: ImageBytes, probeSized: Bool) {
        state.bytes.copyBytes(offset: 0, count: state.received).withUnsafeBytes { body.append($0) }
        state.bytes = body
        state.probeSized = probeSized
    }

    /// Whether two answers are the same version of the image: the same ETag and Last-Modified (both absent counts as
    /// the same: nothing tells them apart, and the bytes a reader had must then repeat exactly).
    private static func sameVersion(_ first: ResponseHead, _ second: ResponseHead) -> Bool {
        first.etag == second.etag && first.lastModified == second.lastModified
    }

    /// Where a body with `head` is kept: a probe's first bytes in ordinary memory (the whole body is moved when it is
    /// continued), any other body sized by its Content-Length in the memory it chooses.
    private static func body(for head: ResponseHead, probeLimit: Int?, memory: BodyMemory) -> ImageBytes {
        guard !head.isNotModified else { return ImageBytes(memory: memory) }
        if let probeLimit, let length = head.contentLength, length > probeLimit {
            return ImageBytes(expectedCount: probeLimit)
        }
        return ImageBytes(expectedCount: head.contentLength, memory: memory)
    }

    /// Known once the head has arrived and the body was checked to be an image (an empty or non-image body must fail
    /// stat and open, since the kernel never reads a file whose size it believes to be 0).
    private static func metadata(of state: State) -> ImageMetadata? {
        guard let head = state.head, state.verified || state.phase == .complete, !state.continuing else { return nil }
        let size: Int
        if let length = head.contentLength {
            size = length
        } else if state.phase == .complete {
            size = state.received
        } else {
            return nil
        }
        return ImageMetadata(
            size: size, contentType: head.contentType, etag: head.etag, lastModified: head.lastModified,
            fetchedAt: state.keptFetchTime ?? state.headReceivedAt)
    }

    /// Why the body is not served as an image, judged on its first bytes; nil when it starts like one.
    private static func signatureRejection(_ bytes: ImageBytes) -> FetchError? {
        let prefix = bytes.copyBytes(offset: 0, count: ImageSignature.bytesNeeded)
        return ImageSignature.detect(prefix) == nil ? .notAnImage(ImageSignature.describe(prefix)) : nil
    }

    /// The slice for a read if it can be answered now (never before the body was checked to be an image).
    private static func slice(of state: State, offset: Int, count: Int) -> ImageSlice? {
        guard state.verified || state.phase == .complete else { return nil }
        let known = metadata(of: state)?.size
        let end = min(offset + count, known ?? Int.max)
        if let known, offset >= known { return .empty }
        guard state.received >= end else { return nil }
        return ImageSlice(bytes: state.bytes, offset: offset, count: end - offset)
    }

    private static func takeSatisfiedWaiters(_ state: inout State) -> [(RangeWaiter, ImageSlice)] {
        var ready: [(RangeWaiter, ImageSlice)] = []
        var waiting: [RangeWaiter] = []
        for waiter in state.rangeWaiters {
            if let slice = slice(of: state, offset: waiter.offset, count: waiter.count) {
                state.served = state.served || (waiter.servesReader && slice.count > 0)
                ready.append((waiter, slice))
            } else {
                waiting.append(waiter)
            }
        }
        state.rangeWaiters = waiting
        return ready
    }
}

// MARK: - Interest

/// Whether someone still wants an answer: a FUSE request withdraws its interest when it is interrupted.
///
/// Guarantees: once withdrawn, always withdrawn; thread safe.
public final class Interest: Sendable {
    private let withdrawn = Atomic<Bool>(false)

    /// An interest not yet withdrawn.
    public init() {}

    /// Whether the asker has gone away.
    public var isWithdrawn: Bool { withdrawn.load(ordering: .acquiring) }

    /// The asker has gone away.
    public func withdraw() { withdrawn.store(true, ordering: .releasing) }
}

// MARK: - ImageSlice

/// A range of an image's bytes handed to a reader. The buffers stay valid as long as the slice is alive.
public struct ImageSlice: Sendable {
    /// The image's bytes, held alive by the slice.
    public let bytes: ImageBytes
    /// Where the range starts in the image.
    public let offset: Int
    /// The range's length in bytes (0 at or past the image's end).
    public let count: Int

    /// The `count` bytes of `bytes` from `offset`.
    public init(bytes: ImageBytes, offset: Int, count: Int) {
        self.bytes = bytes
        self.offset = offset
        self.count = count
    }

    /// Bytes `offset ..< offset + count` of an image of `size` bytes held in `bytes`: fewer at the end, none past it.
    public init(_ bytes: ImageBytes, size: Int, offset: Int, count: Int) {
        self = offset < size ? ImageSlice(bytes: bytes, offset: offset, count: min(count, size - offset)) : .empty
    }

    /// The empty slice.
    public static let empty = ImageSlice(bytes: ImageBytes(), offset: 0, count: 0)

    /// Calls `body` with the buffers holding the slice, in order.
    public func withSegments<Result>(_ body: ([UnsafeRawBufferPointer]) throws -> Result) rethrows -> Result {
        try bytes.withSegments(offset: offset, count: count, body)
    }

    /// The slice was handed on (copied to the kernel): the pages of a file it was read from leave the process's
    /// memory (``ImageBytes/releasePages(offset:count:)``).
    public func releasePages() {
        bytes.releasePages(offset: offset, count: count)
    }
}
