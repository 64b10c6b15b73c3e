import Glibc

/// A POSIX thread: the one way imgfs starts a thread (a ``WorkerPool`` starts its threads with it too).
///
/// Guarantees: the thread inherits the signal mask of the thread that starts it: in the daemon, every signal it
/// answers is blocked before the first thread starts and taken by the signal thread alone, so no thread started here
/// needs signal code of its own. It is named (at most 15 bytes are kept; `ps -L` shows it) before its body runs, and
/// has an 8 MiB stack whatever the process's stack limit (libvips decodes on pool threads).
public final class WorkerThread: Sendable {
    private typealias Run = @Sendable () -> Void

    private final class Body {
        let name: String
        let run: Run
        init(name: String, _ run: @escaping Run) {
            self.name = name
            self.run = run
        }
    }

    private typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32

    private static let stackSize = 8 << 20

    private let handle: pthread_t

    /// Starts `body` on a new joinable thread named `name`.
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        handle = try Self.start(name: name, body)
    }

    /// Starts `body` on a new thread named `name` that nobody joins: its resources go when `body` returns.
    package static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemCallError) {
        pthread_detach(try start(name: name, body))
    }

    private static func start(name: String, _ body: @escaping Run) throws(SystemCallError) -> pthread_t {
        let box = Unmanaged.passRetained(Body(name: name, body))
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        var handle = pthread_t()
        let result = pthread_create(
            &handle, &attributes,
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
        return handle
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
