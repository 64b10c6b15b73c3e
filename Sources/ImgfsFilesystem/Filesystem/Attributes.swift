import Foundation
import ImgfsModel

/// What `stat` shows for one inode.
public struct Attributes: Equatable, Sendable {
    public enum Kind: Equatable, Sendable { case directory, file }

    public var inode: UInt64
    public var kind: Kind
    public var size: Int
    /// Permission bits (``ImageFilesystem/permissions(of:)``): 0444 for images, 0555 or less for directories.
    public var permissions: UInt16
    public var modified: Date
    public var linkCount: Int

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
    public var attributes: Attributes
    /// Seconds the kernel may cache the name → inode binding.
    public var entryTimeout: Double
    /// Seconds the kernel may cache the attributes; 0 while an image's size is not yet known.
    public var attributeTimeout: Double

    public init(attributes: Attributes, entryTimeout: Double, attributeTimeout: Double) {
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
    }
}

/// One name in a directory listing.
public struct DirectoryEntry: Equatable, Sendable {
    public var name: String
    public var inode: UInt64
    public var kind: Attributes.Kind

    public init(name: String, inode: UInt64, kind: Attributes.Kind) {
        self.name = name
        self.inode = inode
        self.kind = kind
    }
}
