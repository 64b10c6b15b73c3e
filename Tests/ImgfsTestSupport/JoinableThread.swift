#if canImport(Glibc)
    import Glibc
#endif

/// A POSIX thread with an explicit stack size that can be joined or detached.
///
/// Exactly one of `join()` or `detach()` must be called for every thread started;
/// the owner (the origin) guarantees that.
final class JoinableThread: Sendable {
    /// Carries the body closure across `pthread_create`.
    private final class Payload {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    private let handle: pthread_t

    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>?) -> Int32

    /// glibc's `pthread_setname_np` (a GNU extension Swift's Glibc module does not export).
    private static let setCurrentName: SetName? = dlsym(nil, "pthread_setname_np").map {
        unsafeBitCast($0, to: SetName.self)
    }

    private init(handle: pthread_t) {
        self.handle = handle
    }

    /// Starts `body` on a new thread named `name` (at most 15 characters are kept)
    /// with a stack of `stackSize` bytes.
    static func start(
        name: String, stackSize: Int,
        _ body: @escaping @Sendable () -> Void
    ) throws -> JoinableThread {
        var attributes = pthread_attr_t()
        var rc = pthread_attr_init(&attributes)
        guard rc == 0 else { throw TestSupportError.systemCall("pthread_attr_init", errno: rc) }
        defer { pthread_attr_destroy(&attributes) }
        rc = pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
        guard rc == 0 else { throw TestSupportError.systemCall("pthread_attr_setstacksize", errno: rc) }

        let payload = Unmanaged.passRetained(Payload(name: name, body: body)).toOpaque()
        var handle = pthread_t()
        rc = pthread_create(
            &handle, &attributes,
            { raw in
                let payload = Unmanaged<Payload>.fromOpaque(raw!).takeRetainedValue()
                _ = JoinableThread.setCurrentName?(pthread_self(), String(payload.name.prefix(15)))
                payload.body()
                return nil
            }, payload)
        guard rc == 0 else {
            Unmanaged<Payload>.fromOpaque(payload).release()
            throw TestSupportError.systemCall("pthread_create", errno: rc)
        }
        return JoinableThread(handle: handle)
    }

    /// True when called on this thread itself.
    var isCurrent: Bool { pthread_equal(handle, pthread_self()) != 0 }

    /// Waits until the thread has finished. A thread cannot join itself: in that
    /// case it is detached instead, so its resources are still released.
    func join() {
        if isCurrent {
            detach()
            return
        }
        _ = pthread_join(handle, nil)
    }

    /// Lets the thread release its resources by itself when it finishes.
    func detach() {
        _ = pthread_detach(handle)
    }
}
