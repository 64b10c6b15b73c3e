// TEMPORARY stand-in until the real DiskCache lands.
import Foundation
public struct CacheRecord: Codable, Equatable, Sendable {
    public var key: String
    public var url: String
    public var size: Int
    public var contentType: String?
    public var etag: String?
    public var lastModified: Date?
    public var fetchedAt: Date
    public var expiresAt: Date
    public var checksum: UInt32
    public var lastAccess: Date
    public init(key: String, url: String, size: Int, contentType: String?, etag: String?, lastModified: Date?, fetchedAt: Date, expiresAt: Date, checksum: UInt32 = 0, lastAccess: Date = Date()) {
        self.key = key; self.url = url; self.size = size; self.contentType = contentType; self.etag = etag
        self.lastModified = lastModified; self.fetchedAt = fetchedAt; self.expiresAt = expiresAt; self.checksum = checksum; self.lastAccess = lastAccess
    }
}
public enum DiskCacheError: Error, Equatable { case corrupt(String), noSpace, io(String) }
