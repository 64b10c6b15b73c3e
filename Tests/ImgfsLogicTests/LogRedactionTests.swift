import ImgfsModel
import Logging
import Synchronization
import Testing

@Suite("Log redaction")
struct LogRedactionTests {
    @Test("the query of every URL is shortened; scheme, host, path and fragment stay")
    func queries() {
        #expect(
            LogRedaction.shortenQueries("fetch failed: HTTP 404 from https://cdn.example/a.png?sig=s3cr3t&e=1")
                == "fetch failed: HTTP 404 from https://cdn.example/a.png?…")
        #expect(
            LogRedaction.shortenQueries("two: http://h/x.png?token=1 and HTTPS://H/y.png?t=2#frag, end")
                == "two: http://h/x.png?… and HTTPS://H/y.png?…#frag, end")
        #expect(LogRedaction.shortenQueries("[\"http://h/p.png?k=v\"]") == "[\"http://h/p.png?…\"]")
        #expect(LogRedaction.shortenQueries("no query: http://h/p.png, done?") == "no query: http://h/p.png, done?")
        #expect(LogRedaction.shortenQueries("plain text? yes") == "plain text? yes")
    }

    @Test("a URL percent-encoded as a name under img/ has its %3F query shortened too")
    func encodedNames() {
        #expect(
            LogRedaction.shortenQueries("lookup https%3A%2F%2Fh%2Fa.png%3Fsig%3Ds3cr3t%23f x")
                == "lookup https%3A%2F%2Fh%2Fa.png%3F…%23f x")
    }

    @Test("the handler shortens the message and the metadata it passes on")
    func handler() {
        let recorder = Recorder()
        var logger = Logger(label: "test") { _ in
            QueryShorteningLogHandler(wrapping: RecordingHandler(recorder: recorder))
        }
        logger.logLevel = .info
        logger.warning("fetch failed: http://h/a.png?sig=1", metadata: ["url": "http://h/a.png?sig=2"])
        #expect(recorder.lines.withLock { $0 } == ["fetch failed: http://h/a.png?… url=http://h/a.png?…"])
    }
}

private final class Recorder: Sendable {
    let lines = Mutex<[String]>([])
}

/// Records each event as `message key=value…`.
private struct RecordingHandler: LogHandler {
    let recorder: Recorder
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    var metadataProvider: Logger.MetadataProvider?

    init(recorder: Recorder) {
        self.recorder = recorder
    }

    func log(event: LogEvent) {
        let pairs = (event.metadata ?? [:]).sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }
        recorder.lines.withLock { $0.append(event.message.description + pairs.joined()) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}
