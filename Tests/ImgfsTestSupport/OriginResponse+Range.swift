/// Range requests, for tests of resumed downloads.
extension OriginResponse {
    /// The first `bytes=N-` range of a `Range` header value, or nil when the value is not of that form.
    public static func rangeStart(_ header: String?) -> Int? {
        guard let header, header.hasPrefix("bytes="), header.hasSuffix("-") else { return nil }
        return Int(header.dropFirst(6).dropLast())
    }

    /// `206 Partial Content` with the bytes of `body` from `start` to its end and their `Content-Range`, plus
    /// `headers` (validators, content type).
    public static func partial(_ body: [UInt8], from start: Int, headers: [(String, String)] = []) -> OriginResponse {
        let range = ("Content-Range", "bytes \(start)-\(body.count - 1)/\(body.count)")
        return OriginResponse(status: 206, headers: headers + [range], body: Array(body[start...]))
    }
}
