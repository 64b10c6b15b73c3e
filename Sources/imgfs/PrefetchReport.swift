import Foundation
import ImgfsModel

/// What `imgfs prefetch` prints when its batch is over: the summary line and a `failed: <url>: <reason>` line per
/// failure, or the same as one JSON object (`--json`).
struct PrefetchReport: Encodable {
    /// One URL that failed, as the JSON lists it.
    struct Failure: Encodable {
        let url: String
        let error: String
    }

    /// How many URLs the list held.
    let total: Int
    /// How many were read whole.
    let succeeded: Int
    /// How many failed.
    let failed: Int
    /// The bytes read.
    let bytes: Int
    /// How long the batch took, to the millisecond.
    let seconds: Double
    /// The URLs that failed, in list order.
    let failures: [Failure]
    /// The batch as it ended, for the summary line.
    private let line: ProgressLine

    init(_ line: ProgressLine, failures: [PrefetchTally.Failure]) {
        total = line.total
        succeeded = line.succeeded
        failed = line.failed
        bytes = line.bytes
        seconds = (line.seconds * 1000).rounded() / 1000
        self.failures = failures.map { Failure(url: $0.url, error: $0.error.description) }
        self.line = line
    }

    private enum CodingKeys: String, CodingKey {
        case total, succeeded, failed, bytes, seconds, failures
    }

    /// The failure lines, then the summary line, each ending in a newline.
    var text: String {
        failures.map { "failed: \($0.url): \($0.error)\n" }.joined() + line.summary + "\n"
    }

    /// The JSON object on one line, ending in a newline.
    func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }
}
