import Foundation

/// Whether FUSE tests can run here. When /dev/fuse is missing they are skipped with a loud message, or, with
/// IMGFS_REQUIRE_FUSE=1 (as CI sets), they run and fail.
enum FuseAvailability {
    static let available: Bool = {
        let present =
            FileManager.default.fileExists(atPath: "/dev/fuse")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/fusermount3")
        if present { return true }
        let required = ProcessInfo.processInfo.environment["IMGFS_REQUIRE_FUSE"] == "1"
        let message = """

            ************************************************************************************
            * /dev/fuse or fusermount3 is missing: the FUSE integration tests \
            \(required ? "FAIL (IMGFS_REQUIRE_FUSE=1)" : "are SKIPPED") *
            ************************************************************************************

            """
        FileHandle.standardError.write(Data(message.utf8))
        return required
    }()
}
