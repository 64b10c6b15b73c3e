import ImgfsModel

extension FilesystemError {
    /// What a lookup in a list's directory or a host's directory answers for a failed image: the name does not exist
    /// (`ENOENT`), whatever the failure, so that programs that list a folder (GIO's enumerator, `ls -l`, Python's
    /// `os.scandir` + `stat`, file managers) take it for an entry removed since the listing and go on with the rest.
    /// The reason stays with the mount (`imgfs why`, `user.imgfs.error.<cache key>` on `.imgfs/`). What is not a
    /// failure of the image (an interrupted reader, a shutdown, a bad name) keeps its own errno.
    var asListedEntry: FilesystemError {
        switch self {
        case .notFound, .accessDenied, .timedOut, .ioFailure, .fileTooLarge, .notAnImage: .notFound
        case .readOnly, .notADirectory, .isADirectory, .nameTooLong, .invalidName, .interrupted, .shuttingDown, .stale,
            .noAttribute, .attributesNotSupported:
            self
        }
    }
}
