import Foundation
import ImgfsTestSupport

/// Images for the thumbnail tests, made by ImageMagick (and Python's zlib for the bomb) in a scratch directory.
final class ThumbnailImages {
    struct Failed: Error, CustomStringConvertible {
        let description: String
    }

    let directory = "/tmp/imgfs-thumbs-\(getpid())-\(UUID().uuidString.prefix(8))"

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// Runs a shell command in the scratch directory; throws with its output when it fails.
    @discardableResult
    func sh(_ command: String) throws -> String {
        let result = try ChildProcess.run("/bin/sh", ["-c", "cd '\(directory)' && \(command)"], timeout: 120)
        guard result.status == 0 else { throw Failed(description: "\(command): \(result.output)") }
        return result.output
    }

    /// The bytes of `name` in the scratch directory.
    func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: "\(directory)/\(name)") else {
            throw Failed(description: "no \(name)")
        }
        return [UInt8](data)
    }

    /// Writes `bytes` as `name` in the scratch directory; returns its path.
    @discardableResult
    func write(_ bytes: [UInt8], _ name: String) throws -> String {
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(name)"))
        return "\(directory)/\(name)"
    }

    /// `identify -format FORMAT` of a file.
    func identify(_ path: String, _ format: String = "%m %w %h") throws -> String {
        let result = try ChildProcess.run("/bin/sh", ["-c", "identify -format '\(format)' '\(path)'"], timeout: 60)
        return result.status == 0 ? result.output : "identify failed: \(result.output)"
    }

    /// An opaque JPEG of `width` x `height` whose EXIF orientation is `orientation` (6: the camera was turned right,
    /// so viewers show it `height` x `width`). ImageMagick 6 writes no EXIF block of its own: the APP1 segment is put
    /// after SOI by hand (a big-endian TIFF header with one Orientation entry).
    func exifRotatedJPEG(width: Int, height: Int, orientation: UInt8) throws -> [UInt8] {
        try sh("convert -size \(width)x\(height) xc:navy -fill yellow -draw 'rectangle 0,0 40,20' plain.jpg")
        let plain = try bytes("plain.jpg")
        let exif: [UInt8] =
            [0xFF, 0xE1, 0x00, 0x22] + Array("Exif".utf8) + [0, 0]
            + [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08]  // MM, 42, IFD at 8
            + [0x00, 0x01]  // one entry
            + [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, orientation, 0x00, 0x00]  // Orientation, SHORT
            + [0x00, 0x00, 0x00, 0x00]  // no next IFD
        return Array(plain[0..<2]) + exif + Array(plain[2...])
    }

    /// A valid 1-bit PNG of 30,000 x 30,000 pixels (900 megapixels) in about 110 KB: a decompression bomb. Written by
    /// Python's zlib (ImageMagick would have to render the 900 megapixels first).
    func bomb() throws -> [UInt8] {
        let script = #"""
            import struct, zlib
            w = h = 30000
            rows = zlib.compress((b"\0" * (1 + (w + 7) // 8)) * h, 9)
            def chunk(kind, data):
                return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
            ihdr = struct.pack(">IIBBBBB", w, h, 1, 0, 0, 0, 0)
            png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", rows) + chunk(b"IEND", b"")
            open("bomb.png", "wb").write(png)
            """#
        try write(Array(script.utf8), "bomb.py")
        try sh("python3 bomb.py")
        return try bytes("bomb.png")
    }
}
