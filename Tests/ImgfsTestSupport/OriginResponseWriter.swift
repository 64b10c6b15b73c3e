#if canImport(Glibc)
    import Glibc
#endif

/// Writes one `OriginResponse` to a socket: delays, status line and headers,
/// body framing (length, close-delimited or chunked), pacing and faults.
struct OriginResponseWriter {
    /// What the connection must do once the response is written.
    enum Ending: Equatable {
        /// Read the next request on the same connection.
        case keepAlive
        /// Close gracefully (FIN).
        case close
        /// Reset the connection (RST).
        case reset
    }

    let core: OriginCore
    let fd: Int32
    /// Path under which body bytes are counted.
    let path: String

    /// Largest body piece written at once when not pacing.
    private static let unpacedPiece = 32 * 1024

    /// Writes `response`; returns how the connection must end. A write failure
    /// (client gone, origin stopping) always yields `.close`.
    func write(_ response: OriginResponse, isHead: Bool, clientWantsClose: Bool) -> Ending {
        let hasBody = OriginResponse.mayHaveBody(response.status)
        let sendsBody = hasBody && !isHead
        let chunked = response.chunked && hasBody
        var mustClose =
            clientWantsClose || response.closeAfterResponse
            || response.truncateAfter != nil || response.resetAfter != nil
        if sendsBody && !chunked {
            switch response.contentLength {
            case .exact: break
            case .omitted: mustClose = true
            case .override(let value): mustClose = mustClose || value != response.body.count
            }
        }

        if response.headerDelay > 0 && !core.delay(until: MonotonicClock.now() + response.headerDelay) {
            return .close
        }
        let head = header(for: response, hasBody: hasBody, chunked: chunked, close: mustClose)
        guard SocketIO.sendAll(fd, Array(head.utf8)) == head.utf8.count else { return .close }

        if sendsBody {
            if response.firstByteDelay > 0 && !core.delay(until: MonotonicClock.now() + response.firstByteDelay) {
                return .close
            }
            guard writeBody(response, chunked: chunked) else { return .close }
        }
        if response.resetAfter != nil { return .reset }
        return mustClose ? .close : .keepAlive
    }

    // MARK: - Head

    /// The status line and header block, ending with the blank line.
    private func header(for response: OriginResponse, hasBody: Bool, chunked: Bool, close: Bool) -> String {
        var lines = ["HTTP/1.1 \(response.status) \(response.effectiveReason)"]
        let userNames = Set(response.headers.map { $0.0.lowercased() })
        if !userNames.contains("date") { lines.append("Date: \(OriginResponseWriter.httpDate())") }
        if case .override(let value) = response.contentLength {
            lines.append("Content-Length: \(value)")
        } else if response.contentLength == .exact && hasBody && !chunked {
            lines.append("Content-Length: \(response.body.count)")
        }
        if chunked { lines.append("Transfer-Encoding: chunked") }
        lines.append("Connection: \(close ? "close" : "keep-alive")")
        for (name, value) in response.headers { lines.append("\(name): \(value)") }
        return lines.joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// The current time in IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate() -> String {
        var now = time(nil)
        var parts = tm()
        guard gmtime_r(&now, &parts) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
        var text = [CChar](repeating: 0, count: 64)
        let length = strftime(&text, text.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: text[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - Body

    /// Writes the body (up to the truncate/reset limit), paced when asked.
    /// Returns false if the socket failed or the origin is stopping.
    private func writeBody(_ response: OriginResponse, chunked: Bool) -> Bool {
        let body = response.body
        var limit = body.count
        if let cut = response.truncateAfter { limit = min(limit, max(cut, 0)) }
        if let cut = response.resetAfter { limit = min(limit, max(cut, 0)) }
        let rate = response.bytesPerSecond.map { max($0, 1) }
        let pieceSize = rate.map { min(max($0 / 100, 256), 64 * 1024) } ?? OriginResponseWriter.unpacedPiece
        let start = MonotonicClock.now()
        var sent = 0
        while sent < limit {
            let end = min(sent + pieceSize, limit)
            if let rate, !core.delay(until: start + Double(end) / Double(rate)) { return false }
            if core.isStopping { return false }
            let ok = body.withUnsafeBytes { bytes in
                writePiece(UnsafeRawBufferPointer(rebasing: bytes[sent..<end]), chunked: chunked)
            }
            guard ok else { return false }
            sent = end
        }
        let cut = response.truncateAfter != nil || response.resetAfter != nil
        if chunked && !cut {
            return SocketIO.sendAll(fd, Array("0\r\n\r\n".utf8)) == 5
        }
        return true
    }

    /// Writes one piece (as one chunk when `chunked`) and counts the payload bytes
    /// that actually reached the socket.
    private func writePiece(_ piece: UnsafeRawBufferPointer, chunked: Bool) -> Bool {
        guard chunked else {
            let written = SocketIO.sendAll(fd, piece)
            core.addBodyBytes(written, path: path)
            return written == piece.count
        }
        let prefix = Array((String(piece.count, radix: 16) + "\r\n").utf8)
        let frame = prefix + Array(piece) + [UInt8(ascii: "\r"), UInt8(ascii: "\n")]
        let written = SocketIO.sendAll(fd, frame)
        core.addBodyBytes(min(max(written - prefix.count, 0), piece.count), path: path)
        return written == frame.count
    }
}
