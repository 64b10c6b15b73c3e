import ImgfsModel

/// The errors filesystem operations report. The FUSE adapter maps each to one errno (ErrnoMapping.swift); the table
/// is in docs/SEMANTICS.md.
public enum FilesystemError: Error, Equatable, Sendable {
    /// No such file: HTTP 404/410, a name that is not an http(s) URL, an unknown digest name. ENOENT.
    case notFound
    /// HTTP 401/403, a URL with credentials, a host or address the policy refuses, or a change or listing that is
    /// the mount owner's and root's alone. EACCES.
    case accessDenied
    /// A connect, stall or total timeout. ETIMEDOUT.
    case timedOut
    /// Any other failure of the origin or the transfer, including a truncated body. EIO.
    case ioFailure
    /// A write, create, rename, mkdir or other change. EROFS.
    case readOnly
    /// A file where a directory was expected. ENOTDIR.
    case notADirectory
    /// A directory where a file was expected. EISDIR.
    case isADirectory
    /// A name or URL over the limits. ENAMETOOLONG.
    case nameTooLong
    /// A name that cannot be decoded (bad percent escape, NUL, not UTF-8). EINVAL.
    case invalidName
    /// The reader was interrupted (a signal) while it waited. EINTR.
    case interrupted
    /// The filesystem is shutting down (SIGTERM, SIGINT, SIGHUP, unmount) while the request waited: the same errno the
    /// kernel gives every request still unanswered when the connection closes. ECONNABORTED.
    case shuttingDown
    /// The inode is not known (the kernel forgot it). ESTALE.
    case stale
    /// The image is larger than --max-size. EFBIG.
    case fileTooLarge
    /// The body is not an image (HTML, JSON, …). EMEDIUMTYPE ("Wrong medium type").
    case notAnImage
    /// No such extended attribute. ENODATA.
    case noAttribute
    /// An extended attribute namespace imgfs does not support (security.*, system.*: no SELinux labels, no ACLs).
    /// EOPNOTSUPP, which tells `ls -l` not to ask again for other files of the mount.
    case attributesNotSupported

    /// The filesystem error for a name that does not decode to a fetchable URL.
    public init(_ error: NameError) {
        switch error {
        case .invalidPercentEscape, .notUTF8, .forbiddenCharacter: self = .invalidName
        case .notAURL, .unsupportedScheme, .missingHost, .invalidPort, .unknownDigest: self = .notFound
        case .credentials: self = .accessDenied
        case .tooLong: self = .nameTooLong
        }
    }
}
