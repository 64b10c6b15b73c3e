import Foundation
import ImgfsModel

/// What `stat` shows for one inode.
public struct Attributes: Equatable, Sendable {
    /// A directory or a regular file.
    public enum Kind: Equatable, Sendable { case directory, file }

    /// The inode number.
    public var inode: UInt64
    /// Directory or file.
    public var kind: Kind
    /// The size in bytes (a directory's is 0).
    public var size: Int
    /// Permission bits (``ImageFilesystem/permissions(of:)``): 0444 for images, 0555 or less for directories.
    public var permissions: UInt16
    /// The modification time.
    public var modified: Date
    /// The number of hard links (`st_nlink`).
    public var linkCount: Int

    /// Attributes with the given fields.
    public init(inode: UInt64, kind: Kind, size: Int, permissions: UInt16, modified: Date, linkCount: Int) {
        self.inode = inode
        self.kind = kind
        self.size = size
        self.permissions = permissions
        self.modified = modified
        self.linkCount = linkCount
    }
}

/// The answer to a lookup: the inode's attributes and how long the kernel may keep them.
public struct Entry: Equatable, Sendable {
    /// The inode's attributes.
    public var attributes: Attributes
    /// Seconds the kernel may cache the name → inode binding.
    public var entryTimeout: Double
    /// Seconds the kernel may cache the attributes; 0 while an image's size is not yet known.
    public var attributeTimeout: Double

    /// An entry with the given attributes and timeouts.
    public init(attributes: Attributes, entryTimeout: Double, attributeTimeout: Double) {
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
    }
}

/// One name in a directory listing.
public struct DirectoryEntry: Equatable, Sendable {
    /// The name within the directory.
    public var name: String
    /// The inode number it names.
    public var inode: UInt64
    /// Directory or file.
    public var kind: Attributes.Kind

    /// An entry with the given fields.
    public init(name: String, inode: UInt64, kind: Attributes.Kind) {
        self.name = name
        self.inode = inode
        self.kind = kind
    }
}
