import CCurlShims
import ImgfsModel

/// Decodes a body's Content-Encoding (gzip, deflate, br) as it arrives, and knows whether the compressed stream
/// reached its end. Not thread safe: one transfer's thread uses it.
///
/// Guarantees: ``isFinished`` is true only when the stream ended properly (gzip: its trailer was read) and nothing
/// followed it; corrupt data, or bytes after the end, make ``feed(_:_:)`` return false.
public final class ContentDecoder {
    private let decoder: OpaquePointer

    /// A decoder for the Content-Encoding `encoding`, or nil when imgfs does not decode it.
    public init?(encoding: String) {
        let kind: Int32
        switch encoding {
        case "gzip", "x-gzip": kind = Int32(IMGFS_DECODER_GZIP)
        case "deflate": kind = Int32(IMGFS_DECODER_DEFLATE)
        case "br": kind = Int32(IMGFS_DECODER_BROTLI)
        default: return nil
        }
        guard let decoder = imgfs_decoder_create(kind) else { return nil }
        self.decoder = decoder
    }

    deinit { imgfs_decoder_free(decoder) }

    /// Decodes `bytes`, handing each decoded piece to `output` (which returns false to stop); returns false when the
    /// data is corrupt or `output` stopped.
    public func feed(_ bytes: UnsafeRawBufferPointer, _ output: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        withoutActuallyEscaping(output) { output in
            var sink = output
            return withUnsafeMutablePointer(to: &sink) { context in
                imgfs_decoder_feed(decoder, bytes.baseAddress, bytes.count, decodedOutput, context) >= 0
            }
        }
    }

    /// Whether the compressed stream reached its end.
    public var isFinished: Bool { imgfs_decoder_finished(decoder) != 0 }
}

extension ContentDecoder {
    /// Whether `bytes` start like a gzip stream (its magic number).
    public static func isGzip(_ bytes: [UInt8]) -> Bool { bytes.starts(with: [0x1f, 0x8b]) }

    /// The decompressed bytes of the whole gzip stream `bytes`, or nil when it is corrupt or cut short.
    public static func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
        guard let decoder = ContentDecoder(encoding: "gzip") else { return nil }
        var output: [UInt8] = []
        let fed = bytes.withUnsafeBytes { input in
            decoder.feed(input) { piece in
                output.append(contentsOf: piece)
                return true
            }
        }
        return fed && decoder.isFinished ? output : nil
    }
}

private let decodedOutput: imgfs_decoder_output = { context, data, count in
    let output = context!.assumingMemoryBound(to: ((UnsafeRawBufferPointer) -> Bool).self).pointee
    return output(UnsafeRawBufferPointer(start: data, count: count)) ? 1 : 0
}
