import ImgfsModel
import Testing

@Suite("Long-URL scheme")
struct ImagePathTests {
    private func url(length: Int, filler: Character = "a") throws -> ImageURL {
        let prefix = "https://cdn.example.com/i.jpg?sig="
        return try ImageURL(prefix + String(repeating: filler, count: length - prefix.utf8.count))
    }

    @Test("short URLs keep the plain one-component form")
    func plain() throws {
        let short = try url(length: 240)
        #expect(NameCodec.encode(short.string).utf8.count == 252)
        let form = ImagePath.form(for: short)
        #expect(form == .plain(name: NameCodec.encode(short.string)))
        #expect(form.relativePath.hasPrefix("img/https%3A%2F%2F"))
    }

    @Test("medium URLs are cut into 255-byte components that reassemble to the encoded URL")
    func chunked() throws {
        let long = try url(length: 1500, filler: "b")
        guard case .chunked(let chunks) = ImagePath.form(for: long) else {
            Issue.record("expected the chunked form")
            return
        }
        #expect(chunks.allSatisfy { $0.utf8.count <= 255 })
        #expect(chunks.dropLast().allSatisfy { $0.hasSuffix("+") && $0.utf8.count == 255 })
        #expect(!chunks.last!.hasSuffix("+"))
        let joined = chunks.map { $0.hasSuffix("+") ? String($0.dropLast()) : $0 }.joined()
        #expect(try NameCodec.decode(Array(joined.utf8)) == long.string)
        #expect(
            ImagePath.form(for: long).relativePath.utf8.count <= ImagePath.pathLimit - ImagePath.assumedMountPointLength
        )
    }

    @Test("URLs up to 8 KiB that do not fit get a digest name", arguments: [3000, 6000, 8192])
    func digest(_ length: Int) throws {
        let long = try url(length: length, filler: "%")
        guard case .digest(let name, let chunks) = ImagePath.form(for: long) else {
            Issue.record("expected the digest form")
            return
        }
        #expect(name == "~" + SHA256.hex(of: long.string.utf8))
        #expect(ImagePath.isDigestName(Array(name.utf8)))
        #expect(chunks.allSatisfy { $0.utf8.count <= 255 })
        #expect(ImagePath.form(for: long).relativePath.utf8.count < 100)
    }

    @Test("the mount point's real length decides between chunked and digest")
    func mountPointLength() throws {
        let long = try url(length: 1300, filler: "%")
        #expect(ImagePath.form(for: long, mountPointLength: 10).relativePath.contains("/+/"))
        if case .digest = ImagePath.form(for: long, mountPointLength: 3000) {
        } else {
            Issue.record("a 3000-byte mount point leaves no room for chunks")
        }
    }

    @Test("every form stays within the limits for 2,000 URL lengths")
    func limits() throws {
        for length in stride(from: 40, through: ImageURL.maximumLength, by: 4) {
            let candidate = try url(length: length, filler: length % 8 == 0 ? "%" : "b")
            let path = ImagePath.form(for: candidate, mountPointLength: 20).relativePath
            #expect(20 + 1 + path.utf8.count <= ImagePath.pathLimit)
            #expect(path.split(separator: "/").allSatisfy { $0.utf8.count <= ImagePath.componentLimit })
        }
    }
}

@Suite("SHA-256")
struct SHA256Tests {
    @Test("matches the FIPS 180-4 test vectors")
    func vectors() {
        #expect(SHA256.hex(of: []) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(of: "abc".utf8) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hex(of: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256.hex(
                of: ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                    + "mnopqrstnopqrstu").utf8)
                == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
        #expect(
            SHA256.hex(of: [UInt8](repeating: 0x61, count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("fed in pieces, the digest is the one-shot digest, as bytes and as hex, for every padding case")
    func pieces() {
        for length in 0..<200 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
            let hex = SHA256.hex(of: bytes)
            for cut in Set([0, length / 3, length / 2, length]) {
                var hash = SHA256()
                hash.update(bytes[..<cut])
                hash.update(bytes[cut...])
                let digest = hash.finish()
                #expect(digest.count == 32)
                #expect(digest.map { String(format: "%02x", $0) }.joined() == hex)
            }
        }
    }
}
