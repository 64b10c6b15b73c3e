import Foundation
import ImgfsModel
import Testing

@Suite("Quantities")
struct QuantityTests {
    @Test("sizes take K, M, G suffixes in powers of 1024")
    func sizes() {
        #expect(Quantity.bytes("512") == 512)
        #expect(Quantity.bytes("64K") == 64 << 10)
        #expect(Quantity.bytes("64M") == 64 << 20)
        #expect(Quantity.bytes("1G") == 1 << 30)
        #expect(Quantity.bytes("1.5GiB") == 3 << 29)
        #expect(Quantity.bytes("10MB") == 10 << 20)
        #expect(Quantity.bytes("lots") == nil)
        #expect(Quantity.bytes("5X") == nil)
    }

    @Test("durations take s, m, h, d")
    func durations() {
        #expect(Quantity.seconds("90") == 90)
        #expect(Quantity.seconds("30m") == 1800)
        #expect(Quantity.seconds("24h") == 86400)
        #expect(Quantity.seconds("7d") == 604800)
        #expect(Quantity.seconds("1.5s") == 1.5)
        #expect(Quantity.seconds("250ms") == 0.25)
        #expect(Quantity.seconds("soon") == nil)
    }
}
