import Glibc

/// A joinable POSIX thread that starts with SIGINT, SIGTERM and SIGHUP blocked, so those signals keep going to the
/// daemon's main thread.
public final class WorkerThread: Sendable {
    private final class Body {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, _ run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32

    private let handle: pthread_t

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept; `ps -L` shows it). The signal mask is
    /// set with pthread_sigmask around pthread_create, so the thread has the termination signals blocked from its
    /// first instruction; the caller's mask is restored afterwards.
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        let previous = TerminationSignals.block()
        let box = Unmanaged.passRetained(Body(name: name, body))
        var handle = pthread_t()
        let result = pthread_create(
            &handle, nil,
            { raw in
                guard let raw else { return nil }
                let body = Unmanaged<Body>.fromOpaque(raw).takeRetainedValue()
                WorkerThread.nameCurrentThread(body.name)
                body.run()
                return nil
            }, box.toOpaque())
        TerminationSignals.restore(previous)
        guard result == 0 else {
            box.release()
            throw SystemCallError(call: "pthread_create", code: result)
        }
        self.handle = handle
    }

    /// Names the calling thread; pthread_setname_np is looked up at run time as Swift's Glibc module hides it.
    private static func nameCurrentThread(_ name: String) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setname_np") else { return }
        let setName = unsafeBitCast(symbol, to: SetName.self)
        var bytes = Array(name.utf8.prefix(15)).map { CChar(bitPattern: $0) }
        bytes.append(0)
        _ = setName(pthread_self(), bytes)
    }

    /// Whether the calling thread is this thread.
    public var isCurrent: Bool { pthread_equal(handle, pthread_self()) != 0 }

    /// Waits for the thread to end; called from the thread itself it detaches instead. Call once.
    public func join() {
        if isCurrent {
            pthread_detach(handle)
        } else {
            pthread_join(handle, nil)
        }
    }
}
