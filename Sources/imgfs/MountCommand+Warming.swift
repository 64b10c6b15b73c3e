import ImgfsFilesystem
import ImgfsPipeline
import Logging

extension MountCommand {
    /// What warms the lists marked with `imgfs list add --warm`: `--tune max-transfers` entries of a list at once,
    /// each list up to half of the images' share of the disk cache (of the memory cache without a disk cache).
    func warmer(_ store: ListStore, repository: ImageRepository, tuning: Tuning, logger: Logger) throws -> ListWarmer {
        let disk = try cache.diskBudget()
        let room = cache.usesDisk ? disk - ThumbnailOptions.diskShare(of: disk) : try cache.memoryBudget()
        return ListWarmer(
            store: store, repository: repository, window: tuning.maxTransfers, budget: room / 2, logger: logger)
    }
}
