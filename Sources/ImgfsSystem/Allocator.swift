import Glibc

/// The C allocator: giving freed memory back to the system after a purge, and the process's resident size.
public enum Allocator {
    private typealias MallocTrim = @convention(c) (Int) -> Int32
    private typealias Mallopt = @convention(c) (Int32, Int32) -> Int32

    /// glibc's `M_TRIM_THRESHOLD` and `M_MMAP_THRESHOLD` (malloc.h).
    private static let trimThresholdParameter: Int32 = -1
    private static let mmapThresholdParameter: Int32 = -3

    /// Lets glibc keep freed memory for reuse instead of returning and refaulting it on every transfer: blocks under
    /// `mmapBelow` come from the heap, and a heap's free top is given back only beyond `keepFree`. Each transfer's
    /// curl receive buffer (512 KiB) was otherwise unmapped or trimmed when freed and faulted in page by page by the
    /// next one. ``trim()`` still gives everything free back, after a purge. Returns whether both were set.
    @discardableResult
    public static func keepFreedMemory(keepFree: Int32 = 32 << 20, mmapBelow: Int32 = 4 << 20) -> Bool {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return false }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        return mallopt(trimThresholdParameter, keepFree) == 1 && mallopt(mmapThresholdParameter, mmapBelow) == 1
    }

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
