extension ImageURL {
    /// This URL's resource with the fragment `fragment` (which names the same download, cache entry and scope), or
    /// this URL when the result does not parse.
    public func withFragment(_ fragment: String) -> ImageURL {
        sameResource(resourceKey + "#" + fragment)
    }
}
