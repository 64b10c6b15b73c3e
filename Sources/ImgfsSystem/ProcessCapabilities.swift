/// The capabilities this process holds, as `/proc/self/status` lists them.
public enum ProcessCapabilities {
    private static let systemAdministration: UInt64 = 1 << 21  // CAP_SYS_ADMIN

    /// Whether the effective set holds CAP_SYS_ADMIN, which the kernel wants for registering passthrough files
    /// (false when the status cannot be read). Inside a user namespace the kernel may still refuse; the mount then
    /// finds out at the first registration.
    public static func hasSystemAdministration() -> Bool {
        SystemFile.contents(of: "/proc/self/status").map(holdsSystemAdministration(status:)) ?? false
    }

    /// Whether the `CapEff:` mask of a /proc/PID/status text holds CAP_SYS_ADMIN (false when there is none).
    static func holdsSystemAdministration(status: String) -> Bool {
        guard let set = effectiveSet(status: status) else { return false }
        return set & systemAdministration != 0
    }

    /// The `CapEff:` mask (hexadecimal) of a /proc/PID/status text.
    static func effectiveSet(status: String) -> UInt64? {
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            return UInt64(line.dropFirst("CapEff:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" }), radix: 16)
        }
        return nil
    }
}
