/// What kind of transfer a resolution starts when no copy of the image is cached and none of it runs, and whether a
/// probe under way (``ImageRepository/probeBytes``) is asked for the rest.
///
/// Guarantees: a probe is asked for the rest only by ``whole`` (and never by a lookup, which may be a stat's).
public enum TransferStart: Sendable, Equatable {
    /// Someone reads the image (an open, a read, read-ahead, prefetching, a list warming): a whole GET.
    case whole
    /// Someone wants its size and first bytes only (a stat, `ls -l`): a GET of the first bytes.
    case probe
    /// Someone looked the name up, to stat it or to read it (the kernel does not say which): one whole GET that stops
    /// after the probe's first bytes unless an open wants the rest in time (``FetchRequest/pausesAtProbe``), so
    /// `cat` is one request and `stat` costs about a probe.
    case lookup
    /// As ``lookup``, by a caller not seen before or whose previous lookup was followed by its open (a program that
    /// reads what it looks up: `cp`, a data loader, a viewer stepping through a folder): the GET goes on past the
    /// probe's bytes for a short window before it pauses (``FetchRequest/expectsOpen``).
    case lookupToRead
}
