import Foundation
import Glibc
import ImgfsModel
import ImgfsPipeline
import Testing

@testable import ImgfsSystem

@Suite("shared-memory bodies", .serialized)
struct SharedMemoryFileTests {
    @Test("bytes written through the file show in the mapping; finishing cuts the file to the image's size")
    func writeMapFinish() throws {
        let memory = try #require(SharedMemoryFile())
        let part = try #require(memory.grow(by: 5000))
        #expect(part.count == 8192, "whole pages")
        let bytes = (0..<5000).map { UInt8($0 % 253) }
        #expect(bytes.withUnsafeBytes { memory.write($0, at: 0) })
        #expect(Array(part.prefix(5000)) == bytes, "the mapping shows what was written")
        let second = try #require(memory.grow(by: 1))
        #expect(second.baseAddress != part.baseAddress)
        let descriptor = try #require(memory.finish(count: 5000))
        var status = stat()
        #expect(fstat(descriptor, &status) == 0 && status.st_size == 5000)
        var back = [UInt8](repeating: 0, count: 6000)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == 5000 && Array(back.prefix(5000)) == bytes, "the file holds exactly the image")
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC != 0, "not inherited by children")
    }

    @Test("an ImageBytes in memfd memory hands out a descriptor of exactly its bytes; small bodies stay in the heap")
    func imageBytes() throws {
        let choice = SharedMemoryFile.bodyMemory(largerThan: 1000, in: nil) { true }
        let body = (0..<300_000).map { UInt8($0 % 241) }
        let bytes = ImageBytes(expectedCount: 100_000, memory: choice)  // announced too small: grows
        for start in stride(from: 0, to: body.count, by: 65_536) {
            body[start..<min(start + 65_536, body.count)].withUnsafeBytes { bytes.append($0) }
        }
        #expect(bytes.copyBytes() == body)
        let descriptor = try #require(bytes.completeDescriptor(size: body.count))
        var back = [UInt8](repeating: 0, count: body.count + 10)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == body.count && Array(back.prefix(body.count)) == body)
        let small = ImageBytes(copying: [1, 2, 3], memory: choice)
        #expect(small.completeDescriptor(size: 3) == nil)
        let off = ImageBytes(copying: body, memory: SharedMemoryFile.bodyMemory(largerThan: 1000, in: nil) { false })
        #expect(off.completeDescriptor(size: body.count) == nil, "not while passthrough is unusable")
    }

    @Test("a body in imgfs's own tmpfs with huge pages: a file without a name, on tmpfs, in huge pages within its size")
    func privateTmpfs() throws {
        guard let tmpfs = Self.ownTmpfs() else { return }
        let hugeBefore = try Self.shmemHugePages()
        let memory = try #require(SharedMemoryFile(in: tmpfs, pages: .huge))
        let size = 8 << 20
        let part = try #require(memory.grow(by: size))
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 >> 3) }
        for start in stride(from: 0, to: size, by: 16_000) {
            #expect(body[start..<min(size, start + 16_000)].withUnsafeBytes { memory.write($0, at: start) })
        }
        #expect(Array(part.prefix(size)) == body, "the mapping shows what was written")
        let descriptor = try #require(memory.finish(count: size - 5))
        var status = stat()
        #expect(fstat(descriptor, &status) == 0 && status.st_nlink == 0 && status.st_size == size - 5, "no name")
        let memfd = try #require(SharedMemoryFile())
        var memfdStatus = stat()
        #expect(fstat(try #require(memfd.finish(count: 0)), &memfdStatus) == 0)
        #expect(status.st_dev != memfdStatus.st_dev, "a file system of its own, not the memfds' one")
        var back = [UInt8](repeating: 0, count: size)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == size - 5 && Array(back.prefix(size - 5)) == Array(body.prefix(size - 5)))
        let policy = (try? String(contentsOfFile: "/sys/kernel/mm/transparent_hugepage/shmem_enabled", encoding: .utf8))
        if policy?.contains("[deny]") == true {
            print("⚠️ shmem_enabled is deny: no huge pages in any tmpfs, so none were checked")
        } else {
            // Four 2 MiB pages lie wholly within 8 MiB (the last one is cut by 5 bytes, so the kernel may split it).
            #expect(try Self.shmemHugePages() - hugeBefore >= 6 << 20, "the body's 2 MiB parts are huge pages")
        }
    }

    @Test("a body in imgfs's own tmpfs with large pages: 256 KiB pages, no huge page, exactly the bytes written")
    func largePages() throws {
        guard let tmpfs = Self.ownTmpfs() else { return }
        let large = "/sys/kernel/mm/transparent_hugepage/hugepages-256kB/stats/shmem_alloc"
        let huge = "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/stats/shmem_alloc"
        let counted = SystemFile.contents(of: large) != nil
        let (largeBefore, hugeBefore) = (Self.counter(large), Self.counter(huge))
        let memory = try #require(SharedMemoryFile(in: tmpfs, pages: .large))
        let size = 3 << 20 | 12_345
        let part = try #require(memory.grow(by: size - 100_000))  // announced too small: grows by a second part
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 29 >> 2) }
        #expect(memory.heldBytes == 0, "no memory for bytes announced, not written")
        for start in stride(from: 0, to: 300_000, by: 16_000) {
            #expect(body[start..<start + 16_000].withUnsafeBytes { memory.write($0, at: start) })
        }
        // 304,000 bytes written: two pieces of 256 KiB allocated, no more.
        #expect(memory.heldBytes == 2 * 256 * 1024, "memory follows the bytes")
        for start in stride(from: 304_000, to: part.count, by: 16_000) {
            #expect(body[start..<min(part.count, start + 16_000)].withUnsafeBytes { memory.write($0, at: start) })
        }
        let rest = try #require(memory.grow(by: size - part.count))
        #expect(body[part.count...].withUnsafeBytes { memory.write($0, at: part.count) })
        #expect(Array(part) + Array(rest.prefix(size - part.count)) == body, "the mappings show what was written")
        let descriptor = try #require(memory.finish(count: size))
        var status = stat()
        #expect(fstat(descriptor, &status) == 0 && status.st_size == size, "cut to the image's size")
        var back = [UInt8](repeating: 0, count: size + 10)
        let read = back.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        #expect(read == size && Array(back.prefix(size)) == body)
        if counted {
            // The first part's whole 256 KiB pieces: 11 of them, allocated one by one.
            #expect(Self.counter(large) - largeBefore >= 11, "the body is in 256 KiB pages")
            #expect(Self.counter(huge) == hugeBefore, "and in no huge page")
        } else {
            let note = "this kernel counts no 256 KiB shmem pages (Linux 6.14 and later do): their size was not checked"
            print("⚠️ " + note)
            #expect(!Self.kernel(atLeast: 6, 14), "a kernel that gives tmpfs large pages counts them")
        }
    }

    @Test("pages read through the mapping leave the process when released; the file keeps the bytes")
    func releasedPages() throws {
        let memory = try #require(SharedMemoryFile())
        let size = 4 << 20
        let part = try #require(memory.grow(by: size))
        let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 >> 2) }
        #expect(body.withUnsafeBytes { memory.write($0, at: 0) })
        #expect(Array(part) == body, "read through the mapping")
        let base = UInt(bitPattern: part.baseAddress)
        #expect(try Self.residentKiB(at: base) >= 4000, "reading mapped the pages")
        memory.releasePages(UnsafeRawBufferPointer(rebasing: part[100..<(size - 100)]))
        #expect(try Self.residentKiB(at: base) == 0, "the pages that range touches, ends included, are gone")
        #expect(Array(part) == body, "and read again, the same bytes")
    }

    /// The resident KiB of the mapping of this process that starts at `address` (`/proc/self/smaps`).
    private static func residentKiB(at address: UInt) throws -> Int {
        let text = try #require(SystemFile.contents(of: "/proc/self/smaps"))
        var inside = false
        for line in text.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let start = UInt(line[..<dash], radix: 16) {
                inside = start == address
            } else if inside, line.hasPrefix("Rss:") {
                return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
            }
        }
        Issue.record("no mapping starts at \(String(address, radix: 16))")
        return -1
    }

    /// imgfs's own tmpfs; nil (said loudly, and a failure for root) where the system refuses one.
    private static func ownTmpfs() -> PrivateTmpfs? {
        if let tmpfs = PrivateTmpfs.shared { return tmpfs }
        let reason = PrivateTmpfs.unavailableReason ?? "no reason given"
        print("⚠️ imgfs cannot make a tmpfs of its own here: \(reason)")
        #expect(geteuid() != 0, "root was refused a tmpfs instance: \(reason)")
        return nil
    }

    /// A counter of `/sys` (0 when missing).
    private static func counter(_ path: String) -> Int {
        SystemFile.contents(of: path).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    /// Whether the running kernel's version is at least `major.minor`.
    private static func kernel(atLeast major: Int, _ minor: Int) -> Bool {
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let parts = release.split(separator: ".").prefix(2).map { Int($0.prefix { $0.isNumber }) ?? 0 }
        return parts.count == 2 && (parts[0], parts[1]) >= (major, minor)
    }

    /// ShmemHugePages of /proc/meminfo, in bytes.
    private static func shmemHugePages() throws -> Int {
        let text = try #require(SystemFile.contents(of: "/proc/meminfo"))
        return try #require(MemorySnapshot.meminfoValue("ShmemHugePages", in: text))
    }
}
