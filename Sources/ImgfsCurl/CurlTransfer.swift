import CCurl
import CCurlShims
import Foundation
import ImgfsModel
import ImgfsPipeline

/// One attempt of one transfer: a libcurl easy handle and what it has seen. Lives on the fetcher's thread only.
///
/// Guarantees: across all attempts of a transfer the observer sees the head of the final 2xx (or 304) response once,
/// before any body byte, then the body bytes in order, and exactly one completion. A retry resumes where the body
/// broke only with a `Range` request whose `If-Range` carries the first answer's strong validator (ETag, else
/// Last-Modified) and whose 206 continues exactly there; any other answer is a new whole body, handed over with
/// ``TransferObserving/transferDidRestart(head:)`` from byte 0 (never spliced). A 206 imgfs did not ask for, a body
/// short of its Content-Length (or the Content-Range total), and a compressed stream that did not reach its end are
/// failures. A probe (``FetchRequest/probeBytes``) asks for the first bytes; its 206 must start at byte 0 and name a
/// total, which the observer is given as the size, and a 200 to it is cut off after those bytes when it announced
/// its length; the body then ends short without error. A lookup's probe (``FetchRequest/pausesAtProbe``) asks for the
/// whole image and, at the probe's end, goes on when the observer wants the rest, else hands over exactly the probe's
/// bytes and pauses (``isPaused``) until ``resume()`` (the bytes curl holds meanwhile are handed on after the probe's,
/// never twice) or ``endAtProbe()`` (the same end as a cut-off probe's). A final non-2xx response is aborted at its
/// header. Every address is checked against the policy before a socket is opened to it, and every request, redirects
/// included, after connecting and before anything is sent; a URL whose host cannot be read is refused when the policy
/// restricts hosts.
final class CurlTransfer: @unchecked Sendable {
    /// The same for every attempt of one transfer (what cancellation names).
    let id: Int
    let request: FetchRequest
    var url: ImageURL { request.url }
    let observer: any TransferObserving
    let easy: UnsafeMutableRawPointer
    /// 0 for the first attempt.
    let attempt: Int
    let configuration: FetcherConfiguration
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// The request rules in force for this attempt (headers per host, cookies, proxy).
    var rules: CurlRequestRules?
    private var head = ResponseHead(status: 0)
    private var sawLocation = false
    private var retryAfter: Double?
    private var rejectedStatus: Int?
    /// Why the address policy refused this transfer (set by the policy checks in CurlTransfer+Policy).
    var refusal: String?
    /// The numeric address of the last request's connection (from the prereq callback).
    var connectedAddress: String?
    /// The URL handed to curl.
    private(set) lazy var requestedURL = url.requestString
    private var observerStopped = false
    /// Why the answer cannot be taken (an unasked or mismatched 206, an undecodable body, a changed image).
    private var failure: FetchError?
    private var completed = false
    /// The head delivered by this or an earlier attempt.
    private(set) var deliveredHead: ResponseHead?
    /// Body bytes delivered to the observer since the body last started at byte 0, by all attempts so far.
    private(set) var delivered: Int
    /// Where this attempt asks the body to continue (`Range: bytes=N-`), when it resumes.
    private let resumeFrom: Int?
    /// The Content-Encoding decoder of the body being received.
    private var decoder: ContentDecoder?
    /// For a probe: where its body ends (the bytes this answer carries or is cut off after).
    private var probeEnd: Int?
    /// A probe's 200 was cut off after its first bytes (curl then reports a write error: it is a success).
    private var probeCut = false
    /// A lookup's probe paused at its end: the write callback returned CURL_WRITEFUNC_PAUSE.
    private(set) var isPaused = false
    /// Bytes of the piece that paused which were handed over already: curl hands the whole piece again on resuming.
    private var handedBeforePause = 0
    /// When a lookup's probe that expects an open stops going on past its first bytes (set when it reaches them).
    private var openWindowEnd: ContinuousClock.Instant?
    /// Called when a lookup's probe pauses at its end (on the fetch thread, inside curl's write callback).
    var onPause: (() -> Void)?
    /// Called with CURLINFO_HTTP_VERSION when the head of a final response (not a redirect) has arrived.
    var onResponse: ((Int) -> Void)?

    init?(
        id: Int, request: FetchRequest, observer: any TransferObserving, configuration: FetcherConfiguration,
        attempt: Int = 0, deliveredHead: ResponseHead? = nil, delivered: Int = 0
    ) {
        guard let easy = curl_easy_init() else { return nil }
        self.id = id
        self.request = request
        self.observer = observer
        self.easy = easy
        self.attempt = attempt
        self.configuration = configuration
        self.deliveredHead = deliveredHead
        self.delivered = delivered
        // Resume only an identity body of known size whose first answer had a strong validator.
        let resumable = deliveredHead.map { $0.contentEncoding == nil && $0.contentLength != nil } ?? false
        self.resumeFrom = delivered > 0 && resumable && deliveredHead?.strongValidator != nil ? delivered : nil
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        configure()
    }

    /// The next attempt of `previous`.
    convenience init?(retrying previous: CurlTransfer) {
        self.init(
            id: previous.id, request: previous.request, observer: previous.observer,
            configuration: previous.configuration, attempt: previous.attempt + 1,
            deliveredHead: previous.deliveredHead, delivered: previous.delivered)
    }

    deinit {
        curl_easy_cleanup(easy)
        errorBuffer.deallocate()
    }

    // MARK: - Set-up

    private func configure() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        imgfs_easy_setopt_string(easy, CURLOPT_URL, requestedURL)
        imgfs_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        imgfs_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        imgfs_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        imgfs_easy_setopt_long(easy, CURLOPT_MAXREDIRS, configuration.maxRedirects)
        imgfs_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        imgfs_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(saturating: configuration.connectTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(saturating: configuration.totalTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, configuration.stallBytesPerSecond)
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, configuration.stallSeconds)
        imgfs_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        imgfs_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, configuration.receiveBufferSize)
        // Compressed bodies (gzip, deflate, br) are decoded here, not by curl, which takes a stream cut before its end
        // as whole (ContentDecoder); their Content-Length is the compressed size and is ignored (ResponseHead).
        imgfs_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "gzip, deflate, br")
        imgfs_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0)
        if configuration.insecure {
            imgfs_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            imgfs_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caFile = configuration.caFile { imgfs_easy_setopt_string(easy, CURLOPT_CAINFO, caFile) }
        if url.scheme == "https" {
            // Wait for an HTTP/2 connection to multiplex on rather than opening another (only for https: against an
            // HTTP/1.1 origin it would hold new transfers back until the first response).
            imgfs_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        }
        var headers = ["Accept: image/avif,image/webp,image/apng,image/*;q=0.9,*/*;q=0.5"]
        if let etag = request.etag { headers.append("If-None-Match: \(etag)") }
        if let lastModified = request.lastModified {
            headers.append("If-Modified-Since: \(HTTPDate.format(lastModified))")
        }
        if let resumeFrom, let validator = deliveredHead?.strongValidator {
            imgfs_easy_setopt_string(easy, CURLOPT_RANGE, "\(resumeFrom)-")
            headers.append("If-Range: \(validator)")
        } else if let probe = probing, !request.pausesAtProbe {
            imgfs_easy_setopt_string(easy, CURLOPT_RANGE, "0-\(probe - 1)")
        }
        let rules = CurlRequestRules(url: url, rules: request.rules, ownHeaders: headers, configuration: configuration)
        rules.configure(easy, configuration: configuration)
        self.rules = rules
        imgfs_easy_setopt_prereq_callback(easy, curlPrereqCallback, context)
        imgfs_easy_setopt_resolver_start(easy, curlResolverStartCallback, context)
        imgfs_easy_setopt_opensocket(easy, curlOpenSocketCallback, context)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
    }

    // MARK: - Callbacks (fetcher thread)

    /// One header line; returns false to abort the transfer.
    func receiveHeader(_ raw: UnsafeRawBufferPointer) -> Bool {
        let line = Array(raw)[...]
        if line.starts(with: "HTTP/".utf8) {
            let fields = line.split(separator: UInt8(ascii: " "), maxSplits: 2)
            head = ResponseHead(status: fields.count > 1 ? Int(String(decoding: fields[1], as: UTF8.self)) ?? 0 : 0)
            sawLocation = false
            retryAfter = nil
            return true
        }
        if HeaderBytes.trimmed(line).isEmpty { return endOfHeader() }
        if HeaderBytes.hasPrefix(line, caseInsensitive: "location:") { sawLocation = true }
        if HeaderBytes.hasPrefix(line, caseInsensitive: "retry-after:") {
            retryAfter = Self.retryAfterSeconds(
                String(decoding: HeaderBytes.trimmed(line.dropFirst(12)), as: UTF8.self))
        }
        head.apply(headerLine: line)
        return true
    }

    private func endOfHeader() -> Bool {
        if head.status >= 200, !(300..<400 ~= head.status && sawLocation), let onResponse {
            var version = 0
            imgfs_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
            if version > 0 { onResponse(version) }
        }
        switch head.status {
        case 100..<200: return true
        case 300..<400 where sawLocation: return true
        case 200..<300 where head.framingProblem != nil:
            // RFC 9112 §6.3: a length that cannot be trusted is an unrecoverable error, never a (short) body.
            failure = .incomplete(head.framingProblem ?? "")
            return false
        case 206 where probing != nil && !request.pausesAtProbe: return acceptsProbe()
        case 206: return continuesBody()
        case 200..<300,
            304 where request.isConditional:
            if let probe = probing, head.status == 200, let length = head.contentLength, length > probe {
                probeEnd = probe  // the server ignored Range: cut off after the probe's bytes
            }
            return acceptsHead()
        default:
            rejectedStatus = head.status
            return false
        }
    }

    /// The probe's bytes this attempt asks for: only a first attempt that does not resume asks for a range.
    private var probing: Int? {
        guard let probe = request.probeBytes, probe > 0, deliveredHead == nil else { return nil }
        return probe
    }

    /// A 206 to a probe: its range starts at byte 0, ends within the probe and names a total, which becomes the size
    /// the observer is given (the image's, not this answer's).
    private func acceptsProbe() -> Bool {
        guard let probe = probing, let range = head.contentRange, range.first == 0, range.count <= probe,
            let total = range.total, head.contentEncoding == nil
        else {
            let range = head.contentRange.map { "bytes \($0.first)-\($0.last)/\($0.total.map(String.init) ?? "*")" }
            failure = .incomplete("the answer to a probe of the first bytes has Content-Range \(range ?? "none")")
            return false
        }
        head.contentLength = total
        probeEnd = range.count
        return acceptsHead()
    }

    /// Hands the head of a 2xx (or 304) answer to the observer: the first one, or a new body from byte 0.
    private func acceptsHead() -> Bool {
        if let encoding = head.contentEncoding {
            guard let decoder = ContentDecoder(encoding: encoding) else {
                failure = .incomplete("the Content-Encoding \(encoding) is not one imgfs decodes")
                return false
            }
            self.decoder = decoder
        }
        head.remoteAddress = connectedAddress
        let restart = deliveredHead != nil
        deliveredHead = head
        delivered = 0
        // A retry that could not resume: the observer takes the new body from byte 0 without mixing.
        let accepted = restart ? observer.transferDidRestart(head: head) : observer.transferDidReceive(head: head)
        observerStopped = !accepted
        return !observerStopped
    }

    /// A 206 is taken only as the continuation this attempt asked for: its Content-Range starts where the body broke
    /// and has the total the first answer announced.
    private func continuesBody() -> Bool {
        let range =
            head.contentRange.map { "bytes \($0.first)-\($0.last)/\($0.total.map(String.init) ?? "*")" }
            ?? "none"
        guard let resumeFrom else {
            failure = .incomplete("HTTP 206 Partial Content (Content-Range \(range)) to a request for the whole image")
            return false
        }
        guard let continuation = head.contentRange, continuation.first == resumeFrom, head.contentEncoding == nil,
            let total = deliveredHead?.contentLength, continuation.total == total
        else {
            failure = .changed("the answer to Range bytes=\(resumeFrom)- has Content-Range \(range)")
            return false
        }
        return true
    }

    /// What the write callback answers curl.
    enum Reception {
        /// The bytes were taken.
        case taken
        /// Abort the transfer.
        case stop
        /// Pause it (CURL_WRITEFUNC_PAUSE): curl keeps the bytes and hands them again on resuming.
        case pause
    }

    /// Body bytes: taken, or the transfer is to be aborted or paused.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Reception {
        guard deliveredHead != nil else { return .stop }
        var bytes = bytes
        if handedBeforePause > 0 {
            // The piece that paused, again: its first bytes were handed over before the pause.
            let skip = min(handedBeforePause, bytes.count)
            handedBeforePause -= skip
            bytes = UnsafeRawBufferPointer(rebasing: bytes[skip...])
            if bytes.isEmpty { return .taken }
        }
        guard let decoder else { return deliver(bytes, mayPause: true) }
        guard decoder.feed(bytes, { self.deliver($0, mayPause: false) == .taken }) else {
            if !observerStopped { failure = .incomplete("the \(deliveredHead?.contentEncoding ?? "") data is corrupt") }
            return .stop
        }
        return .taken
    }

    /// Hands body bytes (decoded) to the observer, up to a probe's end; `mayPause`: they are the bytes curl gave (not
    /// decoded ones), so a lookup's probe may pause after them.
    private func deliver(_ bytes: UnsafeRawBufferPointer, mayPause: Bool) -> Reception {
        var bytes = bytes
        if let end = probeEnd, request.pausesAtProbe, delivered + bytes.count >= end {
            if observer.wantsRest {
                probeEnd = nil  // an open joined in time: the rest of this whole GET is wanted
            } else if mayPause && withinOpenWindow(pastProbe: delivered + bytes.count - end) {
                delivered += bytes.count  // an open is expected: all of these, past the probe's end
                observerStopped = !observer.transferDidReceive(bytes: bytes)
                return observerStopped ? .stop : .taken
            }
        }
        if let probeEnd, delivered + bytes.count > probeEnd {
            bytes = UnsafeRawBufferPointer(rebasing: bytes.prefix(max(0, probeEnd - delivered)))
        }
        delivered += bytes.count
        observerStopped = !bytes.isEmpty && !observer.transferDidReceive(bytes: bytes)
        guard !observerStopped else { return .stop }
        guard let probeEnd, delivered >= probeEnd, delivered < deliveredHead?.contentLength ?? 0, head.status == 200
        else { return .taken }
        if request.pausesAtProbe && mayPause {
            handedBeforePause = bytes.count
            isPaused = true
            onPause?()
            return .pause
        }
        probeCut = true
        return .stop
    }

    /// Whether a lookup's probe that expects an open (``FetchRequest/expectsOpen``) still goes on past its first
    /// bytes, `pastProbe` of them with the piece at hand: until ``FetcherConfiguration/openWindow`` after it first
    /// reached their end, and for at most ``FetcherConfiguration/openWindowBytes``.
    private func withinOpenWindow(pastProbe: Int) -> Bool {
        guard request.expectsOpen, configuration.openWindow > 0, pastProbe <= configuration.openWindowBytes
        else { return false }
        let now = ContinuousClock.now
        let end = openWindowEnd ?? now + .milliseconds(Int(saturating: configuration.openWindow * 1000))
        openWindowEnd = end
        return now < end
    }

    // MARK: - A lookup's probe, paused (fetcher thread, outside curl's callbacks)

    /// The rest is wanted: the transfer goes on as a whole GET (curl may hand the bytes it held before this returns).
    func resume() {
        guard isPaused else { return }
        isPaused = false
        probeEnd = nil
        imgfs_easy_resume(easy)
    }

    /// Nobody wanted the rest in time: the transfer ends as a probe cut off after its first bytes (the caller has
    /// removed its easy handle from the multi handle).
    func endAtProbe() {
        guard isPaused else { return }
        isPaused = false
        probeCut = true
        complete(CURLE_OK)
    }

    /// curl's result, with a body that is not whole (short of its Content-Length or Content-Range total, or a
    /// compressed stream that did not reach its end) counted as CURLE_PARTIAL_FILE.
    private func effective(_ code: CURLcode) -> CURLcode {
        if probeCut && failure == nil && rejectedStatus == nil && !observerStopped { return CURLE_OK }
        guard code == CURLE_OK, rejectedStatus == nil, failure == nil, !observerStopped,
            let head = deliveredHead, !head.isNotModified
        else { return code }
        if let decoder { return decoder.isFinished ? code : CURLE_PARTIAL_FILE }
        if let total = probeEnd ?? head.contentLength, delivered < total { return CURLE_PARTIAL_FILE }
        return code
    }

    // MARK: - Completion

    /// How long to wait before retrying, when the failure with `code` is transient and attempts remain.
    func retryDelay(_ code: CURLcode) -> Double? {
        let code = effective(code)
        guard attempt < configuration.retries, !observerStopped, refusal == nil, failure == nil else { return nil }
        if let status = rejectedStatus {
            guard status == 429 || (500..<600).contains(status) else { return nil }
            if let retryAfter { return min(retryAfter, configuration.maxRetryAfter) }
        } else {
            let transient: Set<UInt32> = [
                CURLE_COULDNT_CONNECT.rawValue, CURLE_RECV_ERROR.rawValue, CURLE_SEND_ERROR.rawValue,
                CURLE_PARTIAL_FILE.rawValue, CURLE_GOT_NOTHING.rawValue, CURLE_HTTP2.rawValue,
                CURLE_HTTP2_STREAM.rawValue
            ]
            guard transient.contains(code.rawValue) else { return nil }
        }
        let backoff = configuration.retryBaseDelay * Double(1 << attempt)
        return backoff * Double.random(in: 0.5...1.5)
    }

    /// What went wrong, for logs.
    func failureDescription(_ code: CURLcode) -> String { fetchError(code).description }

    /// Reports the end of the transfer (once).
    func complete(_ code: CURLcode) {
        let code = effective(code)
        let failed = code != CURLE_OK || rejectedStatus != nil || failure != nil
        complete(error: failed ? fetchError(code) : nil)
    }

    func complete(error: FetchError?) {
        guard !completed else { return }
        completed = true
        observer.transferDidComplete(error: error)
    }

    private func fetchError(_ code: CURLcode) -> FetchError {
        let code = effective(code)
        if let rejectedStatus { return .httpStatus(rejectedStatus) }
        if let refusal { return .refused(refusal) }
        if let failure { return failure }
        if code == CURLE_PARTIAL_FILE, let encoding = deliveredHead?.contentEncoding {
            return .incomplete("the \(encoding) stream ended before its end (\(delivered) bytes decoded)")
        }
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        if code == CURLE_OUT_OF_MEMORY, deliveredHead == nil {
            // libcurl refuses a header line longer than its limit (100 KiB) this way, before imgfs sees the line.
            return .transport("the response's header is too large (libcurl refused it: \(detail))")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timedOut(detail)
        case CURLE_COULDNT_RESOLVE_HOST: return .unresolvable(detail)
        case CURLE_COULDNT_CONNECT: return .unreachable(detail)
        case CURLE_PARTIAL_FILE:
            return .truncated(expected: deliveredHead?.contentLength ?? delivered, received: delivered)
        default: return .transport(detail)
        }
    }

    /// Retry-After as seconds from now: a number, or an HTTP date.
    private static func retryAfterSeconds(_ value: String) -> Double? {
        if let seconds = DeltaSeconds.parse(value) { return Double(seconds) }
        return PlausibleDate.check(HTTPDate.parse(value)).map { max(0, $0.timeIntervalSinceNow) }
    }
}

// MARK: - C callbacks

private func transfer(_ context: UnsafeMutableRawPointer?) -> CurlTransfer {
    Unmanaged<CurlTransfer>.fromOpaque(context!).takeUnretainedValue()
}

private let curlHeaderCallback: imgfs_curl_data_callback = { data, size, count, context in
    let length = size * count
    return transfer(context).receiveHeader(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

private let curlWriteCallback: imgfs_curl_data_callback = { data, size, count, context in
    let length = size * count
    switch transfer(context).receiveBody(UnsafeRawBufferPointer(start: data, count: length)) {
    case .taken: return length
    case .stop: return 0
    case .pause: return Int(IMGFS_CURL_WRITEFUNC_PAUSE)
    }
}

private let curlOpenSocketCallback: imgfs_curl_opensocket_callback = { context, _, address in
    guard let address, transfer(context).allowSocket(to: address) else { return CURL_SOCKET_BAD }
    return imgfs_open_socket(address)
}

private let curlResolverStartCallback: imgfs_curl_resolver_start_callback = { _, _, context in
    transfer(context).allowResolving() ? 0 : 1
}

private let curlPrereqCallback: imgfs_curl_prereq_callback = { context, primaryAddress, _, _, _ in
    let allowed = transfer(context).allowRequest(primaryAddress: primaryAddress.map { String(cString: $0) } ?? "")
    return allowed ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
}

// MARK: - CurlTransfer+Policy

/// The address policy at the two moments curl lets imgfs look: before a socket is opened to an address, and before
/// each request (redirects included) is sent on a connection.
extension CurlTransfer {
    /// Before a socket is opened: whether the policy allows the address (so a refused address is never connected to,
    /// and an open port answers like a closed one).
    func allowSocket(to address: UnsafeMutablePointer<curl_sockaddr>) -> Bool {
        var text = [CChar](repeating: 0, count: 64)
        let numeric = imgfs_sockaddr_text(address, &text, text.count) == 0 ? Self.string(text) : ""
        if let reason = configuration.addressPolicy.refusal(numericAddress: numeric) {
            refusal = reason
            return false
        }
        return true
    }

    /// Before a host name is resolved (the first request's and every redirect's): whether the policy allows the
    /// host, so that a host `--allow-host` or a policy rule refuses is never looked up in DNS.
    func allowResolving() -> Bool {
        var effective: UnsafePointer<CChar>?
        imgfs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let effectiveURL = effective.map { String(cString: $0) } ?? ""
        guard effectiveURL != requestedURL, !effectiveURL.isEmpty else {
            refusal = configuration.addressPolicy.refusal(host: url.host)
            return refusal == nil
        }
        if let host = Self.host(of: effectiveURL) {
            refusal = configuration.addressPolicy.refusal(host: host) ?? request.rules.profile(for: host).refusal
        } else {
            refusal = configuration.addressPolicy.refusal(unparsableURL: effectiveURL)
        }
        return refusal == nil
    }

    /// Before each request (after connecting): whether the policy allows this host and connected address. The host
    /// of a redirect is read with curl's own URL parser, the one that chose where to connect; a URL it cannot read
    /// is refused when the policy restricts hosts.
    func allowRequest(primaryAddress: String) -> Bool {
        var effective: UnsafePointer<CChar>?
        imgfs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        let policy = configuration.addressPolicy
        let effectiveURL = effective.map { String(cString: $0) } ?? ""
        let redirected = effectiveURL != requestedURL
        // Without a redirect the effective URL is the requested one: its host is known without parsing it again.
        let host = redirected ? Self.host(of: effectiveURL) : url.host
        if let host {
            refusal = policy.refusal(host: host)
        } else {
            refusal = policy.refusal(unparsableURL: effectiveURL)
        }
        refusal = refusal ?? policy.refusal(numericAddress: primaryAddress)
        if refusal == nil, let host {
            refusal = request.rules.profile(for: host).refusal
        }
        connectedAddress = primaryAddress.isEmpty ? nil : primaryAddress
        rules?.prepareRequest(easy, effectiveURL: redirected ? try? ImageURL(effectiveURL) : url)
        return refusal == nil
    }

    /// The text of a NUL-terminated buffer.
    private static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host of `url` as curl reads it, or nil.
    private static func host(of url: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 1024)
        return imgfs_url_host(url, &buffer, buffer.count) == 0 ? string(buffer) : nil
    }
}

// MARK: - CurlHeaderLists

/// The two header lists of a transfer: imgfs's own lines, and those plus its host's rule. Built once for a set of
/// lines and shared by every transfer that sends the same lines (curl only reads a list), freed with the last one.
///
/// Guarantees: the lists never change after they are built; ``lists(own:userAgent:profile:)`` returns lists whose
/// lines are exactly the ones asked for.
final class CurlHeaderLists: @unchecked Sendable {
    /// What the lists were built from.
    private struct Key: Equatable {
        var own: [String]
        var userAgent: String
        var profile: RequestProfile
    }

    /// The lists built last: transfers without conditional headers, to hosts without a rule of their own, all ask
    /// for the same lines.
    private static let recent = Locked<(key: Key, lists: CurlHeaderLists)?>(nil)

    let plain: UnsafeMutablePointer<curl_slist>?
    let full: UnsafeMutablePointer<curl_slist>?

    /// The lists for `own` lines and imgfs's `userAgent`, with `profile`'s additions in the full one.
    static func lists(own: [String], userAgent: String, profile: RequestProfile) -> CurlHeaderLists {
        let key = Key(own: own, userAgent: userAgent, profile: profile)
        if let recent = recent.withLock({ $0 }), recent.key == key { return recent.lists }
        let lists = CurlHeaderLists(key)
        recent.withLock { $0 = (key, lists) }
        return lists
    }

    private init(_ key: Key) {
        // The user agent and referer travel as header lines: curl fixes CURLOPT_USERAGENT and CURLOPT_REFERER for
        // all the redirects of a transfer (and drops its own User-Agent for good once a list has one), while the
        // header list can change before each request.
        let named = [
            "User-Agent: \(key.profile.userAgent ?? key.userAgent)",
            key.profile.referer.map { "Referer: \($0)" }
        ]
        var plain: UnsafeMutablePointer<curl_slist>?
        var full: UnsafeMutablePointer<curl_slist>?
        for line in key.own + ["User-Agent: \(key.userAgent)"] { plain = curl_slist_append(plain, line) }
        for line in key.own + named.compactMap({ $0 }) + key.profile.headers { full = curl_slist_append(full, line) }
        self.plain = plain
        self.full = full
    }

    deinit {
        curl_slist_free_all(plain)
        curl_slist_free_all(full)
    }
}

// MARK: - CurlRequestRules

/// What the rules add to one transfer's easy handle: headers, user agent, referer, cookie file and proxy. Lives on the
/// fetcher's thread only, as long as its transfer.
///
/// Guarantees: the rule's headers, user agent, referer and cookie file go only to the scheme, host and port the
/// transfer was started for; a request to any other (after a redirect) carries imgfs's own headers and user agent only,
/// as curl's `--location` without `--location-trusted` does for credentials. Header values are never logged here.
final class CurlRequestRules {
    private let origin: String
    private let profile: RequestProfile
    /// imgfs's own header lines, and those plus the rule's.
    private let lists: CurlHeaderLists

    /// The profile of `url`'s host under `rules` (those the request was made under).
    init(url: ImageURL, rules: RequestRules, ownHeaders: [String], configuration: FetcherConfiguration) {
        origin = url.hostKey
        profile = rules.profile(for: url.host)
        lists = CurlHeaderLists.lists(own: ownHeaders, userAgent: configuration.userAgent, profile: profile)
    }

    /// Sets the options of the first request, and the proxy.
    func configure(_ easy: UnsafeMutableRawPointer, configuration: FetcherConfiguration) {
        if let proxy = configuration.proxy { imgfs_easy_setopt_string(easy, CURLOPT_PROXY, proxy) }
        if let noProxy = configuration.noProxy { imgfs_easy_setopt_string(easy, CURLOPT_NOPROXY, noProxy) }
        // A proxy's answer to CONNECT ("200 Connection established") is not the image's response head.
        imgfs_easy_setopt_long(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        if let cookieFile = profile.cookieFile { imgfs_easy_setopt_string(easy, CURLOPT_COOKIEFILE, cookieFile) }
        sendRuleHeaders(true, easy)
    }

    /// Before each request: the rule's additions when `effectiveURL` is on the transfer's own host, none otherwise.
    func prepareRequest(_ easy: UnsafeMutableRawPointer, effectiveURL: ImageURL?) {
        sendRuleHeaders(effectiveURL?.hostKey == origin, easy)
    }

    private func sendRuleHeaders(_ send: Bool, _ easy: UnsafeMutableRawPointer) {
        imgfs_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, send ? lists.full : lists.plain)
    }
}
