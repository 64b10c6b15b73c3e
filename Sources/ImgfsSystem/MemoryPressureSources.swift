import ImgfsModel
import ImgfsPipeline
import Logging

/// Chooses the memory pressure source for this machine.
public enum MemoryPressureSources {
    /// A `PSIMemoryPressure` when a PSI trigger can be registered, else a `MemAvailableMonitor` on this machine's
    /// files, both with their default settings; logs which one is used and why. Neither is started yet.
    public static func best(logger: Logger) -> any MemoryPressureSource {
        if let psi = PSIMemoryPressure.make(logger: logger) {
            logger.info("memory pressure source: PSI", metadata: ["file": "\(psi.path)", "trigger": "\(psi.trigger)"])
            return psi
        }
        let monitor = MemAvailableMonitor(logger: logger)
        logger.info(
            "memory pressure source: MemAvailable polling",
            metadata: [
                "meminfo": "\(monitor.files.meminfo)",
                "cgroupV1Limit": "\(monitor.files.cgroupV1Limit ?? "none")",
                "cgroupV2Max": "\(monitor.files.cgroupV2Max ?? "none")"
            ])
        return monitor
    }
}
