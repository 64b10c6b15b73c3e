import Foundation
import ImgfsCurl
import ImgfsModel
import ImgfsPipeline
import ImgfsTestSupport
import Logging
import Testing

/// A lookup's probe (``FetchRequest/pausesAtProbe``) against the test origin: one whole GET that pauses after the
/// probe's bytes while its observer does not want the rest, goes on (the same request, no byte twice) when it is
/// wanted, and otherwise ends there after the grace time, or after a short hold when another transfer needs its place;
/// one that expects an open goes on past the probe's bytes for a short window first.
@Suite("Curl fetcher: a lookup's probe pauses", .serialized)
struct CurlPauseTests {
    private static let probe = 64 << 10
    /// A PNG signature, then 2 MiB of varied bytes.
    private static let image: [UInt8] =
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    /// A lookup's probe of `url`; `expectsOpen`: by a caller expected to open it (it goes on past the probe first).
    private static func lookupProbe(_ url: String, expectsOpen: Bool = false) throws -> FetchRequest {
        var request = FetchRequest(url: try ImageURL(url))
        request.probeBytes = probe
        request.pausesAtProbe = true
        request.expectsOpen = expectsOpen
        return request
    }

    /// An observer that does not want the rest (no open has come).
    private static func observerWithoutOpen() -> RecordingObserver {
        let observer = RecordingObserver()
        observer.restWanted.withLock { $0 = false }
        return observer
    }

    private static func origin() throws -> TestOrigin {
        let origin = try TestOrigin()
        origin.route(prefix: "/big") { _ in
            var response = OriginResponse.ok(image, contentType: "image/png")
            response.headers.append(("ETag", "\"v1\""))
            return response
        }
        return origin
    }

    @Test("nobody wants the rest: it ends after exactly the probe's bytes once the grace time has passed")
    func endsAfterGrace() throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let fetcher = CurlFetcherTests.fetcher { $0.probeGrace = 0.3 }
        defer { fetcher.shutdown() }
        let observer = Self.observerWithoutOpen()
        let started = ContinuousClock.now
        _ = fetcher.start(try Self.lookupProbe("\(origin.baseURL)/big1.png"), observer: observer)
        #expect(observer.waitForCompletion() == nil, "a probe's end is a success")
        #expect(ContinuousClock.now - started >= .milliseconds(250), "it waited for an open")
        #expect(observer.body == Array(Self.image.prefix(Self.probe)), "exactly the probe's bytes")
        #expect(observer.events.withLock { $0.heads.first?.contentLength } == Self.image.count)
        #expect(origin.requests().first?.header("Range") == nil, "a whole GET")
    }

    @Test("the rest wanted while it is paused: the same request goes on, every byte once")
    func resumedWhenWanted() throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let fetcher = CurlFetcherTests.fetcher { $0.probeGrace = 30 }
        defer { fetcher.shutdown() }
        let observer = Self.observerWithoutOpen()
        let handle = fetcher.start(try Self.lookupProbe("\(origin.baseURL)/big2.png"), observer: observer)
        #expect(Poll.until(timeout: 10) { observer.body.count >= Self.probe })
        usleep(200_000)
        #expect(observer.body.count == Self.probe, "paused after the probe's bytes")
        #expect(observer.completionCount == 0)
        observer.restWanted.withLock { $0 = true }
        handle.restWanted()
        #expect(observer.waitForCompletion(seconds: 10) == nil, "resumed long before its grace time ends")
        #expect(observer.body == Self.image, "the whole image, no byte twice")
        #expect(origin.requestCount("/big2.png") == 1)
    }

    @Test("expecting an open, it goes on past the probe's bytes up to the window's bytes, then pauses and ends there")
    func windowBytesThenPause() throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let fetcher = CurlFetcherTests.fetcher {
            $0.probeGrace = 0.3
            $0.openWindow = 30
            $0.openWindowBytes = 512 << 10
        }
        defer { fetcher.shutdown() }
        let observer = Self.observerWithoutOpen()
        _ = fetcher.start(try Self.lookupProbe("\(origin.baseURL)/big5.png", expectsOpen: true), observer: observer)
        #expect(observer.waitForCompletion(seconds: 10) == nil, "a probe's end is a success")
        let body = observer.body
        #expect(body.count > Self.probe, "it went on past the probe's bytes")
        #expect(body.count <= Self.probe + (512 << 10), "at most the window's bytes past them: \(body.count)")
        #expect(body == Array(Self.image.prefix(body.count)))
        #expect(origin.requestCount("/big5.png") == 1)
    }

    @Test("expecting an open, it does not pause within the window's time: the image comes whole, one request")
    func windowTimeNotPaused() throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let fetcher = CurlFetcherTests.fetcher {
            $0.probeGrace = 30
            $0.openWindow = 30
            $0.openWindowBytes = 8 << 20
        }
        defer { fetcher.shutdown() }
        let observer = Self.observerWithoutOpen()
        _ = fetcher.start(try Self.lookupProbe("\(origin.baseURL)/big6.png", expectsOpen: true), observer: observer)
        #expect(observer.waitForCompletion(seconds: 10) == nil, "not paused: done long before the grace time")
        #expect(observer.body == Self.image, "the whole image, no byte twice")
        #expect(origin.requestCount("/big6.png") == 1)
    }

    @Test("a transfer that waits for a place ends a paused probe after a short hold")
    func crowdedEndsPaused() throws {
        let origin = try Self.origin()
        defer { origin.stop() }
        let fetcher = CurlFetcherTests.fetcher {
            $0.probeGrace = 30
            $0.maxTransfers = 1
        }
        defer { fetcher.shutdown() }
        let paused = Self.observerWithoutOpen()
        _ = fetcher.start(try Self.lookupProbe("\(origin.baseURL)/big3.png"), observer: paused)
        #expect(Poll.until(timeout: 10) { paused.body.count >= Self.probe })
        let other = try CurlFetcherTests.fetch(fetcher, "\(origin.baseURL)/big4.png")
        #expect(paused.waitForCompletion(seconds: 10) == nil, "ended as a probe, long before its grace time")
        #expect(paused.body.count == Self.probe)
        #expect(other.waitForCompletion(seconds: 10) == nil)
        #expect(other.body == Self.image)
    }
}
