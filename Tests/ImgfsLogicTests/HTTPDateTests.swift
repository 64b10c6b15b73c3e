import Foundation
import ImgfsModel
import Testing

@Suite("HTTP dates")
struct HTTPDateTests {
    @Test("IMF-fixdate parses by hand, the obsolete forms still parse, and format round-trips")
    func dates() throws {
        let reference = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == reference)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == reference)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == reference)
        #expect(HTTPDate.format(reference) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for seconds in stride(from: 0, to: 4_000_000_000, by: 97_654_321) {
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            #expect(HTTPDate.parse(HTTPDate.format(date)) == date)
        }
        #expect(HTTPDate.parse("0") == nil)
    }
}
