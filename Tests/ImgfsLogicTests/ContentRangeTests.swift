import ImgfsModel
import Testing

@Suite("Content-Range and validators")
struct ContentRangeTests {
    @Test("only the satisfied-range form parses, with a total beyond its last byte")
    func parses() {
        #expect(ContentRange("bytes 0-51203/102408") == ContentRange(first: 0, last: 51203, total: 102408))
        #expect(ContentRange("bytes 100-199/*") == ContentRange(first: 100, last: 199, total: nil))
        for bad in [
            "bytes */102408", "bytes 5-4/10", "bytes 0-9/10x", "bytes 0-10/10", "items 0-1/2", "bytes -1-2/3", ""
        ] {
            #expect(ContentRange(bad) == nil, "\(bad)")
        }
        var head = ResponseHead(status: 206)
        head.apply(headerLine: "Content-Range: bytes 10-19/20")
        #expect(head.contentRange?.count == 10)
    }

    @Test("a strong validator is a strong ETag, else Last-Modified; a weak ETag alone is none")
    func strongValidator() {
        #expect(ResponseHead(status: 200, etag: "\"v1\"").strongValidator == "\"v1\"")
        #expect(ResponseHead(status: 200, etag: "W/\"v1\"").strongValidator == nil)
        let date = HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT")!
        #expect(
            ResponseHead(status: 200, etag: "W/\"v1\"", lastModified: date).strongValidator
                == "Sun, 06 Nov 1994 08:49:37 GMT")
    }
}
