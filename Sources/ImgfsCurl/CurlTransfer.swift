import CCurl
import CCurlShims
import ImgfsCore

/// One libcurl easy handle and what it has seen; lives on the fetcher's thread only (not thread safe).
///
/// Guarantees: the observer sees the head of the final 2xx response before any body byte, body bytes in order, and
/// exactly one completion (``complete(_:)`` is idempotent). A final non-2xx response is aborted at its header.
final class CurlTransfer: @unchecked Sendable {
    let request: FetchRequest
    var url: ImageURL { request.url }
    let observer: any TransferObserving
    let easy: UnsafeMutableRawPointer
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    private var head = ResponseHead(status: 0)
    private var sawLocation = false
    private var headDelivered = false
    private var rejectedStatus: Int?
    private var received = 0
    private var completed = false
    private var headerList: UnsafeMutablePointer<curl_slist>?

    init?(request: FetchRequest, observer: any TransferObserving, configuration: FetcherConfiguration) {
        guard let easy = curl_easy_init() else { return nil }
        self.request = request
        self.observer = observer
        self.easy = easy
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        configure(configuration)
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    // MARK: - Set-up

    private func configure(_ configuration: FetcherConfiguration) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        imgfs_easy_setopt_string(easy, CURLOPT_URL, url.requestString)
        imgfs_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        imgfs_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        imgfs_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
        imgfs_easy_setopt_long(easy, CURLOPT_MAXREDIRS, configuration.maxRedirects)
        imgfs_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        imgfs_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(configuration.totalTimeout * 1000))
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, configuration.stallBytesPerSecond)
        imgfs_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, configuration.stallSeconds)
        imgfs_easy_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent)
        imgfs_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        if url.scheme == "https" {
            // Wait for an HTTP/2 connection to multiplex on rather than opening another (only for https: against an
            // HTTP/1.1 origin it would hold new transfers back until the first response).
            imgfs_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)
        }
        var headers = ["Accept: image/avif,image/webp,image/apng,image/*;q=0.9,*/*;q=0.5"]
        if let etag = request.etag { headers.append("If-None-Match: \(etag)") }
        if let lastModified = request.lastModified { headers.append("If-Modified-Since: \(HTTPDate.format(lastModified))") }
        for header in headers { headerList = curl_slist_append(headerList, header) }
        imgfs_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, headerList)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        imgfs_easy_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        imgfs_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
    }

    // MARK: - Callbacks (fetcher thread)

    /// One header line; returns false to abort the transfer.
    func receiveHeader(_ line: UnsafeRawBufferPointer) -> Bool {
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            let fields = text.split(separator: " ", maxSplits: 2)
            head = ResponseHead(status: fields.count > 1 ? Int(fields[1]) ?? 0 : 0)
            sawLocation = false
            return true
        }
        if text == "\r\n" || text == "\n" { return endOfHeader() }
        if text.lowercased().hasPrefix("location:") { sawLocation = true }
        head.apply(headerLine: text)
        return true
    }

    private func endOfHeader() -> Bool {
        switch head.status {
        case 100..<200: return true
        case 300..<400 where sawLocation: return true
        case 200..<300,
             304 where request.isConditional:
            headDelivered = true
            observer.transferDidReceive(head: head)
            return true
        default:
            rejectedStatus = head.status
            return false
        }
    }

    /// Body bytes; returns false to abort the transfer.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard headDelivered else { return false }
        received += bytes.count
        observer.transferDidReceive(bytes: bytes)
        return true
    }

    // MARK: - Completion

    /// Reports the end of the transfer (once).
    func complete(_ code: CURLcode) {
        complete(error: code == CURLE_OK && rejectedStatus == nil ? nil : fetchError(code))
    }

    func complete(error: FetchError?) {
        guard !completed else { return }
        completed = true
        observer.transferDidComplete(error: error)
    }

    private func fetchError(_ code: CURLcode) -> FetchError {
        if let rejectedStatus { return .httpStatus(rejectedStatus) }
        let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return .timedOut(detail)
        case CURLE_COULDNT_RESOLVE_HOST: return .unresolvable(detail)
        case CURLE_COULDNT_CONNECT: return .unreachable(detail)
        case CURLE_PARTIAL_FILE: return .truncated(expected: head.contentLength ?? received, received: received)
        default: return .transport(detail)
        }
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
