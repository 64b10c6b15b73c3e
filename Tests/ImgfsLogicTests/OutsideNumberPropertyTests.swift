import Foundation
import ImgfsModel
import ImgfsPipeline
import Testing

/// Property tests of every piece of arithmetic on numbers from outside (issue 34): seeded random and extreme values
/// fed to the shared tier's record decoder and to the freshness arithmetic (max-age, Expires, Retry-After's
/// delta-seconds, dates), asserting that nothing traps and every result stays in range.
@Suite("Outside numbers (property)")
struct OutsideNumberPropertyTests {
    typealias Generator = NamePropertyTests.Generator

    /// Numbers at and beyond every edge, as text and as JSON numbers.
    static let extremes: [String] = [
        "0", "-0", "1", "-1", "2147483647", "2147483648", "4294967296", "9223372036854775807",
        "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551616",
        "99999999999999999999999999999", "1e300", "-1e300", "1e308", "1.7976931348623157e308", "1e400", "-1e400",
        "4.9e-324", "0.5", "-0.5", "1.5e3", "0x10", "+5", " 5", "5 ", "", "inf", "-inf", "nan", "NaN", "Infinity"
    ]

    @Test("Int(saturating:) of NaN, infinities and every magnitude: no trap, clamped, exact where it fits")
    func saturating() {
        let specials: [Double] = [
            .nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 9.223372036854775807e18,
            -9.223372036854775808e18, 9.2233720368547748e18, 0, -0.0, 0.999, -0.999
        ]
        var generator = Generator(state: 34)
        let random = (0..<20_000).map { _ in Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &generator)) }
        for value in specials + random {
            let result = Int(saturating: value)
            if value.isNaN {
                #expect(result == 0)
            } else if value >= 9.223372036854775807e18 {
                #expect(result == .max)
            } else if value <= -9.223372036854775808e18 {
                #expect(result == .min)
            } else {
                #expect(result == Int(value.rounded(.towardZero)), "\(value)")
            }
        }
    }

    @Test("sizes and durations of options and policy files: extreme values are refused, never trap")
    func quantities() {
        #expect(Quantity.bytes("64M") == 64 << 20 && Quantity.seconds("24h") == 86400)
        for text in [String(repeating: "9", count: 400), "9999999999T", "1e400", "nan", "inf", "-1", "1.5.5G"] {
            #expect(Quantity.bytes(text) == nil, "\(text)")
            #expect(Quantity.seconds(text) == nil, "\(text)")
        }
        #expect(Quantity.seconds(String(repeating: "9", count: 400) + "d") == nil)
        var generator = Generator(state: 1024)
        for _ in 0..<20_000 {
            let text =
                Self.randomText(&generator) + ["", "K", "M", "G", "T", "s", "m", "h", "d"].randomElement(
                    using: &generator)!
            if let bytes = Quantity.bytes(text) { #expect((0...Quantity.maximumBytes).contains(bytes)) }
            if let seconds = Quantity.seconds(text) { #expect(seconds >= 0 && seconds <= Quantity.maximumSeconds) }
        }
    }

    @Test("delta-seconds: digits only, capped at 2^31 (RFC 9111), never negative or fractional")
    func deltaSeconds() {
        #expect(DeltaSeconds.parse("120") == 120)
        #expect(DeltaSeconds.parse("9223372036854775807") == DeltaSeconds.maximum)
        #expect(DeltaSeconds.parse(String(repeating: "9", count: 5000)) == DeltaSeconds.maximum)
        for text in ["", "-1", "1e3", "inf", "nan", "+5", " 5", "0x10", "1.5"] {
            #expect(DeltaSeconds.parse(text) == nil)
        }
        var generator = Generator(state: 9111)
        for _ in 0..<20_000 {
            let text = Self.randomText(&generator)
            if let seconds = DeltaSeconds.parse(text) { #expect((0...DeltaSeconds.maximum).contains(seconds)) }
        }
    }

    @Test("freshness of random and extreme Cache-Control, Expires and Date headers: no trap, expiry within 2^31 s")
    func freshness() {
        let now = Date()
        let honouring = ExpiryPolicy(lifetime: 600, honorsCacheControl: true)
        var generator = Generator(state: 2616)
        var heads: [ResponseHead] = []
        for value in Self.extremes {
            for header in ["Cache-Control: max-age=\(value)", "Cache-Control: max-age=\"\(value)\", no-transform"] {
                var head = ResponseHead(status: 200)
                head.apply(headerLine: header)
                heads.append(head)
            }
        }
        for _ in 0..<5_000 {
            var head = ResponseHead(status: 200)
            head.apply(headerLine: "Cache-Control: max-age=\(Self.randomText(&generator))")
            head.apply(headerLine: "Expires: \(Self.randomDate(&generator))")
            head.apply(headerLine: "Date: \(Self.randomDate(&generator))")
            head.apply(headerLine: "Last-Modified: \(Self.randomDate(&generator))")
            heads.append(head)
        }
        for head in heads {
            for date in [head.expires, head.date, head.lastModified].compactMap({ $0 }) {
                #expect(PlausibleDate.contains(date))
                _ = HTTPDate.format(date)
            }
            let decision = honouring.decide(for: head, now: now)
            let lifetime = decision.expiresAt.timeIntervalSince(now)
            #expect(lifetime.isFinite && lifetime >= 0 && lifetime <= 9999 * 366 * 86400, "\(head)")
            if head.expires == nil { #expect(lifetime <= Double(DeltaSeconds.maximum)) }
            // What the tier does with such a decision: a TTL in milliseconds and a max-age for the reader.
            _ = max(1000, Int(saturating: decision.expiresAt.timeIntervalSinceNow * 1000))
        }
        for extreme in [
            Date.distantFuture, .distantPast, Date(timeIntervalSince1970: 1e300), .init(timeIntervalSince1970: -1e300)
        ] {
            _ = HTTPDate.format(extreme)
        }
    }

    @Test("shared-tier records with random and extreme fields: no trap; whatever is accepted is in range")
    func records() {
        let url = "http://a/x.png"
        let maxSize = 64 << 20
        var generator = Generator(state: 19)
        let numbers = Self.extremes.filter { Double($0) != nil && !$0.contains(" ") && !$0.hasPrefix("+") }
        let fields = ["expiresAt", "lastModified", "size", "contentLength", "pieceSize", "checksum", "version"]
        func number() -> String {
            Bool.random(using: &generator)
                ? numbers.randomElement(using: &generator)!
                : String(
                    Int64.random(in: Int64.min...Int64.max, using: &generator)
                        >> Int.random(in: 0...63, using: &generator))
        }
        var accepted = 0
        for _ in 0..<20_000 {
            var values = [
                "\"version\":2", "\"url\":\"\(url)\"", "\"fetch\":\"f\"", "\"expiresAt\":4102444800000",
                "\"pieceSize\":1048576"
            ]
            for field in fields where Int.random(in: 0..<3, using: &generator) == 0 {
                values.removeAll { $0.hasPrefix("\"\(field)\"") }
                values.append("\"\(field)\":\(number())")
            }
            let bytes = Array("{\(values.shuffled(using: &generator).joined(separator: ","))}".utf8)
            guard case .success(let record) = SharedTierRecord.check(bytes, url: url, maxSize: maxSize) else {
                continue
            }
            accepted += 1
            #expect(PlausibleDate.contains(record.expiresAt))
            #expect(record.lastModified.map(PlausibleDate.contains) ?? true)
            #expect((1...SharedTierRecord.maximumPieceSize).contains(record.pieceSize))
            #expect((record.size ?? 0) >= 0 && (record.size ?? 0) <= maxSize)
            #expect((record.contentLength ?? 0) >= 0 && (record.contentLength ?? 0) <= maxSize)
            _ = record.pieceCount
            _ = record.responseHead(now: Date())
            _ = record.encoded()
        }
        #expect(accepted > 100, "the generator should produce valid records too")
        let defaults = ["expiresAt": "4102444800000", "pieceSize": "1048576"]
        for (field, value) in [
            ("expiresAt", "1e300"), ("expiresAt", "-1e300"), ("lastModified", "1e300"),
            ("size", "9223372036854775807"), ("size", "-1"), ("contentLength", "9223372036854775807"),
            ("pieceSize", "0"), ("pieceSize", "9223372036854775807")
        ] {
            let fields = defaults.merging([field: value]) { $1 }.map { "\"\($0)\":\($1)" }.joined(separator: ",")
            let bytes = Array(#"{"version":2,"url":"\#(url)","fetch":"f",\#(fields)}"#.utf8)
            if case .success = SharedTierRecord.check(bytes, url: url, maxSize: maxSize) {
                Issue.record("accepted \(field): \(value)")
            }
        }
    }

    @Test("Content-Length: agreeing duplicates are one length; disagreeing or non-numeric ones are a framing problem")
    func contentLengths() {
        func head(_ values: [String]) -> ResponseHead {
            var head = ResponseHead(status: 200)
            for value in values { head.apply(headerLine: "Content-Length: \(value)") }
            return head
        }
        #expect(head(["1557"]).contentLength == 1557 && head(["1557"]).framingProblem == nil)
        #expect(head(["1557", "1557"]).contentLength == 1557 && head(["1557", "1557"]).framingProblem == nil)
        #expect(head(["1557, 1557"]).framingProblem == nil)
        for values in [["1557", "100"], ["1557, 100"], ["-1"], ["+5"], ["1e3"], ["99999999999999999999999"], [""]] {
            let parsed = head(values)
            #expect(parsed.framingProblem != nil && parsed.contentLength == nil, "\(values)")
        }
        #expect(
            head(["1557", "100"]).framingProblem?.contains("conflicting Content-Length values 1557 and 100") == true)
        var generator = Generator(state: 6)
        for _ in 0..<10_000 {
            let parsed = head([Self.randomText(&generator), Self.randomText(&generator)])
            #expect((parsed.contentLength ?? 0) >= 0)
        }
    }

    // MARK: - Generators

    private static func randomText(_ generator: inout Generator) -> String {
        switch Int.random(in: 0..<4, using: &generator) {
        case 0: return extremes.randomElement(using: &generator)!
        case 1: return String(UInt64.random(in: 0...UInt64.max, using: &generator))
        case 2: return String(repeating: "9", count: Int.random(in: 1...40, using: &generator))
        default:
            let alphabet = Array("0123456789-+.eE,x ")
            return String(
                (0..<Int.random(in: 0...12, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
        }
    }

    private static func randomDate(_ generator: inout Generator) -> String {
        let years = ["0000", "0001", "1969", "1970", "2038", "9999", "99999", "-001"]
        let days = ["00", "01", "31", "99"]
        let times = ["00:00:00", "23:59:60", "99:99:99"]
        return "Sun, \(days.randomElement(using: &generator)!) Jan \(years.randomElement(using: &generator)!) "
            + "\(times.randomElement(using: &generator)!) GMT"
    }
}
