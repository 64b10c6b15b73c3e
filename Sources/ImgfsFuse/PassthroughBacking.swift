import CFuseShims
import Foundation
import ImgfsFilesystem
import ImgfsModel
import Logging

/// Registers image files with the kernel for FUSE passthrough (``BackingFileRegistering``): libfuse's backing-file
/// calls for ``OpenDecision``, which decides which opens use them.
///
/// Guarantees: once the kernel refuses a registration for lack of privilege (CAP_SYS_ADMIN), ``isUsable`` is false
/// and no other is attempted; every refusal and failed unregistration is logged.
final class PassthroughBacking: BackingFileRegistering {
    private let session: FuseSessionPointer
    private let availability: PassthroughAvailability
    private let logger: Logger

    init(session: FuseSessionPointer, availability: PassthroughAvailability, logger: Logger) {
        self.session = session
        self.availability = availability
        self.logger = logger
    }

    /// Whether opens may use passthrough now (``PassthroughAvailability/isUsable``).
    var isUsable: Bool { availability.isUsable }

    func register(_ descriptor: Int32) -> Int32? {
        let backingId = imgfs_fuse_backing_open(session.raw, descriptor)
        if backingId > 0 { return backingId }
        refused(-backingId)
        return nil
    }

    func unregister(_ backingId: Int32) {
        let result = imgfs_fuse_backing_close(session.raw, backingId)
        if result != 0 {
            logger.warning("cannot drop a passthrough registration: \(String(cString: strerror(-result)))")
        }
    }

    private func refused(_ error: Int32) {
        if error == EPERM || error == EACCES {
            if availability.markRefused() {
                logger.notice(
                    """
                    the kernel lets only a privileged daemon (CAP_SYS_ADMIN) register files for passthrough; large \
                    images are read through imgfs instead
                    """
                )
            }
        } else {
            logger.warning("cannot register an image for passthrough: \(String(cString: strerror(error)))")
        }
    }
}
