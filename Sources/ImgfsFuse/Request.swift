import CFuse
import Foundation
import ImgfsCore

/// A FUSE request that may be answered later from another thread: the reply functions copy what they send.
///
/// Guarantees nothing by itself about answering once; every code path of ``FuseOperations`` ends in one reply.
struct Request: @unchecked Sendable {
    let raw: fuse_req_t

    func fail(_ error: FilesystemError) {
        fuse_reply_err(raw, error.errno)
    }

    func succeed() {
        fuse_reply_err(raw, 0)
    }

    func reply(entry: Entry) {
        var parameters = fuse_entry_param()
        parameters.ino = fuse_ino_t(entry.attributes.inode)
        parameters.generation = 1
        parameters.attr = StatConversion.stat(entry.attributes)
        parameters.attr_timeout = entry.attributeTimeout
        parameters.entry_timeout = entry.entryTimeout
        fuse_reply_entry(raw, &parameters)
    }

    func reply(attributes: Attributes, timeout: Double) {
        var status = StatConversion.stat(attributes)
        fuse_reply_attr(raw, &status, timeout)
    }

    /// An extended attribute's value (or a list of names): its size when asked with capacity 0, ERANGE when it does
    /// not fit.
    func reply(attribute value: [UInt8], capacity: Int) {
        if capacity == 0 {
            fuse_reply_xattr(raw, value.count)
        } else if capacity < value.count {
            fuse_reply_err(raw, ERANGE)
        } else {
            _ = value.withUnsafeBytes { fuse_reply_buf(raw, $0.baseAddress?.assumingMemoryBound(to: CChar.self), value.count) }
        }
    }

    func reply(slice: ImageSlice) {
        slice.withSegments { pieces in
            var vectors = pieces.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
            if vectors.isEmpty {
                fuse_reply_buf(raw, nil, 0)
            } else {
                fuse_reply_iov(raw, &vectors, Int32(vectors.count))
            }
        }
    }
}

/// Attributes as `struct stat`.
enum StatConversion {
    static func stat(_ attributes: Attributes) -> Glibc.stat {
        var status = Glibc.stat()
        status.st_ino = UInt(attributes.inode)
        status.st_mode = (attributes.kind == .directory ? S_IFDIR : S_IFREG) | mode_t(attributes.permissions)
        status.st_nlink = UInt(attributes.linkCount)
        status.st_size = off_t(attributes.size)
        status.st_blksize = 4096
        status.st_blocks = blkcnt_t((attributes.size + 511) / 512)
        status.st_uid = getuid()
        status.st_gid = getgid()
        let seconds = attributes.modified.timeIntervalSince1970
        let time = timespec(tv_sec: Int(seconds.rounded(.down)), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        status.st_mtim = time
        status.st_ctim = time
        status.st_atim = time
        return status
    }
}
