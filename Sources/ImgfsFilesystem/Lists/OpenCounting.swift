import ImgfsModel

/// Counters of opens (per list, per host): how many, how many found their image cached, the bytes opened.
public protocol OpenCounting {
    var opens: Int { get set }
    var hits: Int { get set }
    var misses: Int { get set }
    var bytes: Int { get set }
}

extension OpenCounting {
    /// Counts one open: a hit when its image was cached, `bytes` its size when known.
    mutating func countOpen(hit: Bool, bytes: Int) {
        opens += 1
        hits += hit ? 1 : 0
        misses += hit ? 0 : 1
        self.bytes += bytes
    }
}
