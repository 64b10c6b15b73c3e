import Foundation
import ImgfsModel
import Testing

/// Image files that ship with the operating system. Each test is skipped when the machine has no such file; the
/// hand-made headers in `ImageSignatureTests` cover every format regardless.
@Suite("Image signatures of real files")
struct ImageSignatureRealFileTests {
    /// The first `limit` files (sorted, so runs are repeatable) under `roots` with one of `extensions`, visiting at
    /// most 50,000 directory entries.
    static func files(under roots: [String], extensions: Set<String>, limit: Int) -> [String] {
        var found: [String] = []
        for root in roots {
            guard let walker = FileManager.default.enumerator(atPath: root) else { continue }
            var visited = 0
            var matches: [String] = []
            while let relative = walker.nextObject() as? String, visited < 50_000 {
                visited += 1
                if extensions.contains((relative as NSString).pathExtension.lowercased()) {
                    matches.append(root + "/" + relative)
                }
            }
            found += matches.sorted()
            if found.count >= limit { break }
        }
        return Array(found.prefix(limit))
    }

    static func prefix(of path: String) -> [UInt8]? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return (try? handle.read(upToCount: ImageSignature.bytesNeeded)).map { Array($0) }
    }

    static let png = files(under: ["/usr/share/icons"], extensions: ["png"], limit: 20)
    static let jpeg = files(under: ["/usr/share/backgrounds", "/usr/share/doc"], extensions: ["jpg", "jpeg"], limit: 20)
    static let svg = files(
        under: ["/usr/share/icons/hicolor/scalable", "/usr/share/icons"], extensions: ["svg"], limit: 20)

    @Test("PNG files from /usr/share/icons", .enabled(if: !png.isEmpty))
    func pngFiles() throws {
        for path in Self.png { #expect(ImageSignature.detect(try #require(Self.prefix(of: path))) == .png, "\(path)") }
    }

    @Test("JPEG files from /usr/share/backgrounds or /usr/share/doc", .enabled(if: !jpeg.isEmpty))
    func jpegFiles() throws {
        for path in Self.jpeg {
            #expect(ImageSignature.detect(try #require(Self.prefix(of: path))) == .jpeg, "\(path)")
        }
    }

    @Test("SVG files from /usr/share/icons", .enabled(if: !svg.isEmpty))
    func svgFiles() throws {
        for path in Self.svg { #expect(ImageSignature.detect(try #require(Self.prefix(of: path))) == .svg, "\(path)") }
    }

    static let otherRoots = ["/usr/share/pixmaps", "/usr/share/doc", "/usr/lib/python3", "/usr/share/icons"]
    static let others: [(ImageSignature.Format, [String])] = [
        (.gif, files(under: otherRoots, extensions: ["gif"], limit: 10)),
        (.bmp, files(under: otherRoots, extensions: ["bmp"], limit: 10)),
        (.tiff, files(under: otherRoots, extensions: ["tif", "tiff"], limit: 10)),
        (.webp, files(under: otherRoots, extensions: ["webp"], limit: 10))
    ]

    @Test("GIF, BMP, TIFF and WebP files, where the machine has any", .enabled(if: others.contains { !$0.1.isEmpty }))
    func otherFiles() throws {
        for (format, paths) in Self.others {
            for path in paths {
                #expect(ImageSignature.detect(try #require(Self.prefix(of: path))) == format, "\(path)")
            }
        }
    }

    @Test("text and HTML files from /usr/share/doc are not images")
    func documentationIsNotImages() throws {
        let licenses = ["GPL-3", "Apache-2.0", "BSD"].map { "/usr/share/common-licenses/" + $0 }
        let paths =
            licenses
            + Self.files(under: ["/usr/share/doc"], extensions: ["html", "htm", "txt", "json", "xml", "md"], limit: 80)
        for path in paths {
            guard let prefix = Self.prefix(of: path), !prefix.isEmpty else { continue }
            #expect(ImageSignature.detect(prefix) == nil, "\(path): \(ImageSignature.describe(prefix))")
        }
    }
}
