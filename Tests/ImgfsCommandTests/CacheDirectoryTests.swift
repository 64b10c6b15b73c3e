import Foundation
import Glibc
import Testing

@testable import imgfs

/// Issue 36, item 6: a cache directory that is not the daemon's own is refused, with the path and the reason.
@Suite("Cache directory", .serialized)
struct CacheDirectoryTests {
    /// A fresh directory (mode 0700) under /tmp, removed by `body`'s caller.
    private func withDirectory(_ body: (String) throws -> Void) throws {
        let path = "/tmp/imgfs-cachedir-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        chmod(path, 0o700)
        try body(path)
    }

    private func refusal(_ path: String, owner: uid_t = geteuid()) -> String? {
        do {
            try CacheDirectory.check(path, owner: owner)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("a directory of the daemon's user, writable by it alone, with imgfs's folders and files, is accepted")
    func ownDirectory() throws {
        try withDirectory { path in
            for folder in ["v1", "v1/ab", "variants", "variants/v1", "lists"] {
                try FileManager.default.createDirectory(atPath: "\(path)/\(folder)", withIntermediateDirectories: false)
                chmod("\(path)/\(folder)", 0o755)
            }
            FileManager.default.createFile(atPath: "\(path)/imgfs.log", contents: nil)
            FileManager.default.createFile(atPath: "\(path)/v1/lock", contents: nil)
            #expect(refusal(path) == nil)
            chmod(path, 0o755)
            #expect(refusal(path) == nil)
        }
    }

    @Test("writable by group or others: refused, saying so")
    func writableByOthers() throws {
        try withDirectory { path in
            chmod(path, 0o777)
            #expect(refusal(path)?.contains("writable by every user") == true, "\(refusal(path) ?? "accepted")")
            chmod(path, 0o1777)
            #expect(refusal(path) != nil, "sticky or not")
            chmod(path, 0o770)
            #expect(refusal(path)?.contains("writable by its group") == true)
            chmod(path, 0o700)
            try FileManager.default.createDirectory(atPath: "\(path)/lists", withIntermediateDirectories: false)
            chmod("\(path)/lists", 0o777)
            #expect(refusal(path)?.contains("\(path)/lists") == true, "a folder inside is checked too")
        }
    }

    @Test("owned by another user: refused, the directory or a folder in it")
    func anotherUsersDirectory() throws {
        try withDirectory { path in
            #expect(refusal(path, owner: geteuid() + 1)?.contains("belongs to user") == true)
            guard geteuid() == 0 else { return }
            try FileManager.default.createDirectory(atPath: "\(path)/v1", withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: "\(path)/v1/ab", withIntermediateDirectories: false)
            #expect(chown("\(path)/v1/ab", 65534, 65534) == 0)
            #expect(refusal(path)?.contains("\(path)/v1/ab belongs to user 65534") == true, "\(refusal(path) ?? "")")
        }
    }

    @Test("symbolic links planted for the log, v1, lists or a key folder are refused, never followed")
    func plantedLinks() throws {
        for planted in ["imgfs.log", "v1", "lists", "v1/cd", "variants/v1"] {
            try withDirectory { path in
                for folder in ["v1", "variants"] where folder != planted {
                    try FileManager.default.createDirectory(
                        atPath: "\(path)/\(folder)", withIntermediateDirectories: false)
                }
                #expect(symlink("/nonexistent-imgfs-link-target", "\(path)/\(planted)") == 0)
                #expect(
                    refusal(path)?.contains("\(path)/\(planted) is a symbolic link") == true,
                    "\(planted): \(refusal(path) ?? "accepted")")
            }
        }
    }

    @Test("the log file is created 0600, refused through a symbolic link, and made 0600 when others could read it")
    func logFile() throws {
        try withDirectory { path in
            let victim = "\(path)/victim"
            FileManager.default.createFile(atPath: victim, contents: Data("root only\n".utf8))
            #expect(symlink(victim, "\(path)/imgfs.log") == 0)
            #expect(throws: LogFile.Unusable.self) { _ = try LogFile.open("\(path)/imgfs.log") }
            #expect(try String(contentsOfFile: victim, encoding: .utf8) == "root only\n")
            let fresh = try LogFile.open("\(path)/new.log")
            close(fresh)
            var status = stat()
            #expect(stat("\(path)/new.log", &status) == 0 && status.st_mode & 0o777 == 0o600)
            FileManager.default.createFile(atPath: "\(path)/old.log", contents: nil)
            chmod("\(path)/old.log", 0o644)
            close(try LogFile.open("\(path)/old.log"))
            #expect(stat("\(path)/old.log", &status) == 0 && status.st_mode & 0o777 == 0o600)
        }
    }
}
