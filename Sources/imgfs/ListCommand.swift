import ArgumentParser
import Foundation
import ImgfsFilesystem
import ImgfsFuse
import ImgfsModel

/// `imgfs list add|rm|ls MOUNT ...`: the URL lists a mount shows as `<mount>/lists/NAME/`. Lists are files under the
/// mount's cache directory (it names it in the `user.imgfs.list_store` attribute of `<mount>/lists`); a running mount
/// sees a change at once.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "Manage the URL lists a mount shows as folders under <mount>/lists/.",
        discussion: """
            `ls` of a list never uses the network. `ls -l` of a list (any program that stats the entries while the \
            folder is open: file managers, gio list, os.scandir) costs each entry not cached a probe, one request \
            for the image's first 64 KiB (its size), not a download; a read then fetches only the rest. `cat` of an \
            entry by name is one GET. `list add` probes every entry (--no-probe skips it).

            Every entry of a list is listed. An entry whose image failed (an HTTP error, a host that refuses or \
            cannot be reached, a body that is not an image) answers stat with "No such file or directory", so file \
            managers, gio list, ls -l and scripts go on with the other entries; `imgfs why URL` says why. A failure \
            is remembered for --negative-ttl (404, 410, unknown hosts) or --tune failure-memory (any other, 10s), \
            then tried again; `imgfs purge` forgets every failure at once. A list added with --warm loads all its \
            entries in the background (after what readers wait for, up to half of the cache) when it is added and \
            the first time it is opened after each mount: a data loader that reads it in a shuffled order then finds \
            its images cached or on their way. Removing the list stops its warming.

            A list learns each entry's size, format, width, height and EXIF orientation when the entry is looked up, \
            listed with ls -l or opened, and keeps them beside the list: after a remount stat and ls -l of a known \
            entry need no network. Entries carry them as user.imgfs.{size,format,width,height,orientation}; \
            <mount>/lists/NAME/.index.jsonl has one JSON object a line per entry (for jq and pandas), and \
            `imgfs list show NAME [--json]` prints the same.
            """,
        subcommands: [ListAddCommand.self, ListRemoveCommand.self, ListShowCommand.self, ListEntriesCommand.self]
    )

    /// The list store of the imgfs mount at `mountPoint`, or exit status 2 with a one-line error.
    static func store(of mountPoint: String, command: String) throws -> ListStore {
        let path = URL(fileURLWithPath: mountPoint).standardizedFileURL.path
        guard let directory = MountControl.get("user.imgfs.list_store", on: "\(path)/lists") else {
            // Another user's mount shared with allow_other: its lists are its owner's.
            if access("\(path)/lists", R_OK) != 0 && errno == EACCES {
                throw usageError(
                    "the lists of \(path) are its owner's: \(String(cString: strerror(EACCES)))", command: command)
            }
            throw usageError("\(path) is not an imgfs mount with lists", command: command)
        }
        return ListStore(directory: URL(fileURLWithPath: directory))
    }

    /// Prints `imgfs list <command>: message` on stderr and gives exit status 2.
    static func usageError(_ message: String, command: String) -> ExitCode {
        FileHandle.standardError.write(Data("imgfs list \(command): \(message)\n".utf8))
        return ExitCode(2)
    }
}

/// `imgfs list rm MOUNT NAME`.
struct ListRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Remove a list.")

    @Argument(help: "The mount point of a running imgfs mount.") var mountPoint: String
    @Argument(help: "The list's name.") var name: String

    func run() throws {
        let store = try ListCommand.store(of: mountPoint, command: "rm")
        do {
            guard try store.remove(name) else { throw ListCommand.usageError("no list called \(name)", command: "rm") }
            // A running warm of the list notices within half a second and calls off its transfers.
            try? ListWarmMark.set(false, list: name, in: store)
        } catch let error as ListStore.InvalidName {
            throw ListCommand.usageError(error.description, command: "rm")
        }
    }
}

/// `imgfs list ls [MOUNT]`: one line per list, `NAME<TAB>entries`.
struct ListShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "Show the lists and their sizes.")

    @OptionGroup var target: MountArgument

    func run() throws {
        let store = try ListCommand.store(of: try target.resolved(), command: "ls")
        let lines = store.names().map { "\($0)\t\(store.list($0)?.entries.count ?? 0)\n" }
        FileHandle.standardOutput.write(Data(lines.joined().utf8))
    }
}
