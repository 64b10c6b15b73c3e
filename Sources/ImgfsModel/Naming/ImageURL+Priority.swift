// MARK: - The background mark: a fragment that asks for a low-priority transfer

extension ImageURL {
    /// The fragment `imgfs prefetch` adds to the names it reads: their transfers wait behind every other class.
    public static let backgroundFragment = "imgfs-background"
    private static let backgroundSuffix = "#" + backgroundFragment

    /// ``FetchPriority/background`` when the URL's fragment is ``backgroundFragment``, else ``FetchPriority/waited``.
    /// Fragments are never sent, so the mark changes only the admission order, never the image.
    public var requestedPriority: FetchPriority {
        string.hasSuffix(Self.backgroundSuffix) ? .background : .waited
    }

    /// This URL with the background mark in place of its fragment.
    public var markedBackground: ImageURL {
        sameResource(resourceKey + "#" + Self.backgroundFragment)
    }
}
