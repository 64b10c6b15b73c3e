import Foundation
import ImgfsModel
import Testing

@Suite("Response header lines as bytes")
struct HeaderBytesTests {
    @Test("names match in any case; values lose surrounding spaces, tabs and CRLF")
    func parsing() {
        var head = ResponseHead(status: 200)
        head.apply(headerLine: Array("CONTENT-LENGTH:\t 1234 \r\n".utf8)[...])
        head.apply(headerLine: Array("Content-Type:image/png\r\n".utf8)[...])
        head.apply(headerLine: Array("eTaG:   \"abc\"\r\n".utf8)[...])
        head.apply(headerLine: Array("Last-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n".utf8)[...])
        head.apply(headerLine: Array("no colon here\r\n".utf8)[...])
        #expect(head.contentLength == 1234)
        #expect(head.contentType == "image/png")
        #expect(head.etag == "\"abc\"")
        #expect(head.lastModified == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("prefixes ignore ASCII case; trimming an all-space line leaves nothing")
    func helpers() {
        #expect(HeaderBytes.hasPrefix(Array("Retry-After: 5".utf8)[...], caseInsensitive: "retry-after:"))
        #expect(!HeaderBytes.hasPrefix(Array("Retry".utf8)[...], caseInsensitive: "retry-after:"))
        #expect(HeaderBytes.trimmed(Array(" \t\r\n".utf8)[...]).isEmpty)
        #expect(Array(HeaderBytes.trimmed(Array("  x y \r\n".utf8)[...])) == Array("x y".utf8))
    }
}
