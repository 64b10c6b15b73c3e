import Glibc

/// The C allocator: giving freed memory back to the system after a purge, and the process's resident size.
public enum Allocator {
    private typealias MallocTrim = @convention(c) (Int) -> Int32

    /// Asks glibc to return free heap memory to the system (`malloc_trim(0)`). Safe to call from any thread; does
    /// nothing when the C library has no malloc_trim.
    public static func trim() {
        // malloc.h is not part of Swift's Glibc module, so the function is looked up at run time.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
    }

    /// The process's resident set size in bytes (VmRSS in /proc/self/status), or nil when it cannot be read.
    public static func residentBytes() -> Int? {
        SystemFile.contents(of: "/proc/self/status").flatMap(residentBytes(status:))
    }

    /// VmRSS in bytes from the text of a /proc/PID/status file.
    static func residentBytes(status: String) -> Int? {
        MemorySnapshot.meminfoValue("VmRSS", in: status)
    }
}
