import Glibc

/// A joinable POSIX thread. It inherits the signal mask of the thread that starts it: in the daemon, every signal it
/// answers is blocked before the first thread starts and taken by ``SignalThread`` alone.
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

    /// Starts `body` on a new thread named `name` (at most 15 bytes are kept; `ps -L` shows it).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
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
