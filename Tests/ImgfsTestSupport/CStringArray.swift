#if canImport(Glibc)
    import Glibc
#endif

/// A NULL-terminated array of C strings (`argv`/`envp` style) that owns its memory.
final class CStringArray {
    private var pointers: [UnsafeMutablePointer<CChar>?]

    /// Copies `strings` into C memory.
    init(_ strings: [String]) {
        pointers = strings.map { strdup($0) } + [nil]
    }

    deinit {
        for pointer in pointers { free(pointer) }
    }

    /// Calls `body` with a pointer to the NULL-terminated array, valid only inside `body`.
    func withPointers<R>(_ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) throws -> R) rethrows -> R {
        try pointers.withUnsafeBufferPointer { try body($0.baseAddress!) }
    }
}
