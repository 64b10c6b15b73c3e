import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel
import ImgfsPipeline

/// What `imgfs mount` builds before it mounts: the filesystem and the parts that are stopped, flushed or purged
/// around it.
///
/// Guarantees: a value only; every part is shared with ``filesystem`` (none is a copy).
struct MountParts {
    let repository: ImageRepository
    let memoryCache: MemoryCache
    let variants: VariantStore
    let filesystem: ImageFilesystem
    let passthrough: PassthroughAvailability
    /// Whether passthrough was wanted (`--tune passthrough=on`) but this process may not use it (no CAP_SYS_ADMIN).
    let passthroughNeedsPrivilege: Bool
    /// What warms the lists marked for it (stopped at unmount).
    var warmer: ListWarmer?
}
