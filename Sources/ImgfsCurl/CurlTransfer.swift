import CCurl
import CCurlShims
import Foundation
import ImgfsCore

/// One attempt of one transfer: a libcurl easy handle and what it has seen. Lives on the fetcher's thread only.
///
/// Guarantees: across all attempts of a transfer the observer sees the head of the final 2xx (or 304) response once,
/// before any body byte, and the body bytes once each, in order (a retry skips the bytes an earlier attempt delivered,
/// after checking the image did not change); and exactly one completion. A final non-2xx response is aborted at its
/// header. Every request, redirects included, is checked against the address policy after connecting and before
/// anything is sent.
final class CurlTransfer: @unchecked Sendable {
    /// The same for every attempt of one transfer (what cancellation names).
    let id: Int
    let request: FetchRequest
    var url: ImageURL { request.url }
    let observer: any TransferObserving
    let easy: UnsafeMutableRawPointer
    /// 0 for the first attempt.
    let attempt: Int
    private let configuration: FetcherConfiguration
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var rules: CurlRequestRules?
    private var head = ResponseHead(status: 0)
    private var sawLocation = false
    private var retryAfter: Double?
    private var rejectedStatus: Int?
    private var refusal: String?
    /// The numeric address of the last request's connection (from the prereq callback).
    private var connectedAddress: String?
    /// The URL handed to curl.
    private lazy var requestedURL = url.requestString
    private var observerStopped = false
    private var changedBetweenAttempts = false
    private var completed = false
    /// The head delivered by this or an earlier attempt.
    private(set) var deliveredHead: ResponseHead?
    /// Body bytes delivered to the observer, by all attempts so far.
    private(set) var delivered: Int
    /// Body bytes of this attempt's response seen so far (to skip what earlier attempts delivered).
    private var position = 0

    init?(id: Int, request: FetchRequest, observer: any TransferObserving, configuration: FetcherConfiguration,
          attempt: Int = 0, deliveredHead: ResponseHead? = nil, delivered: Int = 0) {
        guard let easy = curl_easy_init() else { return nil }
        self.id = id
        self.request = request
        self.observer = observer
        self.easy = easy
        self.attempt = attempt
        self.configuration = configuration
        self.deliveredHead = deliveredHead
        self.delivered = delivered
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        configure()
    }

    /// The next attempt of `previous`.
    convenience init?(retrying previous: CurlTransfer) {
        self.init(id: previous.id, request: previous.request, observer: previous.observer,
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
        imgfs_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(configuration.totalTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, configuration.stallBytesPerSecond)
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, configuration.stallSeconds)
        imgfs_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        imgfs_easy_setopt_long(easy, CURLOPT_BUFFERSIZE, configuration.receiveBufferSize)
        // Decode a compressed body (gzip, deflate, br) should an origin send one; its Content-Length is then the
        // compressed size and is ignored (ResponseHead).
        imgfs_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, "")
        if configuration.insecure {
            imgfs_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 0)
            imgfs_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 0)
        }
        if url.scheme == "https" {
            // Wait for an HTTP/2 connection to multiplex on rather than opening another (only for https: against an
            // HTTP/1.1 origin it would hold new transfers back until the first response).
            imgfs_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        }
        var headers = ["Accept: image/avif,image/webp,image/apng,image/*;q=0.9,*/*;q=0.5"]
        if let etag = request.etag { headers.append("If-None-Match: \(etag)") }
        if let lastModified = request.lastModified { headers.append("If-Modified-Since: \(HTTPDate.format(lastModified))") }
        let rules = CurlRequestRules(url: url, ownHeaders: headers, configuration: configuration)
        rules.configure(easy, configuration: configuration)
        self.rules = rules
        imgfs_easy_setopt_prereq_callback(easy, curlPrereqCallback, context)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
    }

    // MARK: - Callbacks (fetcher thread)

    /// Before each request (after connecting): whether the policy allows this host and connected address.
    func allowRequest(primaryAddress: String) -> Bool {
        var effective: UnsafePointer<CChar>?
        imgfs_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
        // Without a redirect the effective URL is the requested one: its host is known without parsing it again.
        let host = effective.flatMap { pointer in
            strcmp(pointer, requestedURL) == 0 ? url.host : (try? ImageURL(String(cString: pointer)))?.host
        }
        refusal = host.flatMap { configuration.addressPolicy.refusal(host: $0) }
            ?? configuration.addressPolicy.refusal(numericAddress: primaryAddress)
            ?? host.flatMap { ActivePolicy.profile(for: $0).refusal }
        connectedAddress = primaryAddress.isEmpty ? nil : primaryAddress
        rules?.prepareRequest(easy, effectiveURL: effective.flatMap { try? ImageURL(String(cString: $0)) })
        return refusal == nil
    }

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
            retryAfter = Self.retryAfterSeconds(String(decoding: HeaderBytes.trimmed(line.dropFirst(12)), as: UTF8.self))
        }
        head.apply(headerLine: line)
        return true
    }

    private func endOfHeader() -> Bool {
        switch head.status {
        case 100..<200: return true
        case 300..<400 where sawLocation: return true
        case 200..<300,
             304 where request.isConditional:
            if let earlier = deliveredHead {
                // A retry: the bytes delivered before must be the start of this body.
                changedBetweenAttempts = earlier.contentLength != head.contentLength || earlier.etag != head.etag
                return !changedBetweenAttempts
            }
            head.remoteAddress = connectedAddress
            deliveredHead = head
            observerStopped = !observer.transferDidReceive(head: head)
            return !observerStopped
        default:
            rejectedStatus = head.status
            return false
        }
    }

    /// Body bytes; returns false to abort the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard deliveredHead != nil else { return false }
        let skip = min(bytes.count, max(0, delivered - position))
        position += bytes.count
        guard skip < bytes.count else { return true }
        let fresh = UnsafeRawBufferPointer(rebasing: bytes[skip...])
        delivered += fresh.count
        observerStopped = !observer.transferDidReceive(bytes: fresh)
        return !observerStopped
    }

    // MARK: - Completion

    /// How long to wait before retrying, when the failure with `code` is transient and attempts remain.
    func retryDelay(_ code: CURLcode) -> Double? {
        guard attempt < configuration.retries, !observerStopped, refusal == nil, !changedBetweenAttempts else { return nil }
        if let status = rejectedStatus {
            guard status == 429 || (500..<600).contains(status) else { return nil }
            if let retryAfter { return min(retryAfter, configuration.maxRetryAfter) }
        } else {
            let transient: Set<UInt32> = [CURLE_COULDNT_CONNECT.rawValue, CURLE_RECV_ERROR.rawValue, CURLE_SEND_ERROR.rawValue,
                                          CURLE_PARTIAL_FILE.rawValue, CURLE_GOT_NOTHING.rawValue, CURLE_HTTP2.rawValue,
                                          CURLE_HTTP2_STREAM.rawValue]
            guard transient.contains(code.rawValue) else { return nil }
        }
        let backoff = configuration.retryBaseDelay * Double(1 << attempt)
        return backoff * Double.random(in: 0.5...1.5)
    }

    /// What went wrong, for logs.
    func failureDescription(_ code: CURLcode) -> String { fetchError(code).description }

    /// Reports the end of the transfer (once).
    func complete(_ code: CURLcode) {
        let failed = code != CURLE_OK || rejectedStatus != nil
        complete(error: failed ? fetchError(code) : nil)
    }

    func complete(error: FetchError?) {
        guard !completed else { return }
        completed = true
        observer.transferDidComplete(error: error)
    }

    private func fetchError(_ code: CURLcode) -> FetchError {
        if let rejectedStatus { return .httpStatus(rejectedStatus) }
        if let refusal { return .refused(refusal) }
        if changedBetweenAttempts { return .transport("the image changed between attempts") }
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timedOut(detail)
        case CURLE_COULDNT_RESOLVE_HOST: return .unresolvable(detail)
        case CURLE_COULDNT_CONNECT: return .unreachable(detail)
        case CURLE_PARTIAL_FILE: return .truncated(expected: deliveredHead?.contentLength ?? delivered, received: delivered)
        default: return .transport(detail)
        }
    }

    /// Retry-After as seconds from now: a number, or an HTTP date.
    private static func retryAfterSeconds(_ value: String) -> Double? {
        if let seconds = Double(value) { return max(0, seconds) }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSinceNow) }
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
    return transfer(context).receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

private let curlPrereqCallback: imgfs_curl_prereq_callback = { context, primaryAddress, _, _, _ in
    let allowed = transfer(context).allowRequest(primaryAddress: primaryAddress.map { String(cString: $0) } ?? "")
    return allowed ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
}
