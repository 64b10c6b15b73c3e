import Foundation
import ImgfsPipeline

extension Tuning {
    /// Every `--tune` key, in the order docs/PERFORMANCE.md lists them.
    static var keys: [TuningKey] {
        [
            .toggle(
                "passthrough", \.passthrough, default: "on",
                "The kernel reads cached images by itself (FUSE passthrough, Linux 6.9+, needs root); off: every "
                    + "read goes through imgfs."),
            .toggle(
                "direct-cold-reads", \.directColdReads, default: "on",
                "Reads of a large image still arriving go straight to the reader's buffer; off: they fill the page "
                    + "cache, as later reads do."),
            TuningKey(
                name: "pages", defaultValue: "large",
                summary: "Large image bodies in 256 KiB pages of imgfs's own tmpfs (large), 2 MiB huge pages (huge), "
                    + "or memfds of 4 KiB pages (small).",
                expected: "one of " + Pages.allCases.map(\.rawValue).joined(separator: ", ")
            ) { tuning, text in
                guard let pages = Pages(rawValue: text.lowercased()) else { return false }
                tuning.pages = pages
                return true
            },
            .number(
                "kernel-read-ahead", \.kernelReadAheadKiB, 0...65536, default: "1024",
                "The kernel's read-ahead in KiB, which also sizes its READs (0: the kernel's 128; needs root)."),
            .number(
                "read-ahead", \.readAhead, 0...1024, default: "8",
                "Entries after an opened list entry that are loaded ahead."),
            .number(
                "fetch-threads", \.fetchThreads, 1...256, default: "cores, at most 4",
                "Threads receiving transfers, each with its own connections."),
            .number(
                "max-transfers", \.maxTransfers, 1...4096, default: "16",
                "Transfers running at once."),
            .number(
                "max-transfers-per-host", \.maxTransfersPerHost, 1...1024, default: "6",
                "Per scheme, host and port: transfers over HTTP/1.1 (a connection each), or HTTP/2 connections."),
            .number(
                "max-streams-per-connection", \.maxStreamsPerConnection, 1...1024, default: "100",
                "Transfers one HTTP/2 connection carries at once (never more than the server allows)."),
            .duration(
                "connect-timeout", \.connectTimeout, atLeast: 0.001, default: "10s",
                "How long to wait for a connection."),
            .duration(
                "stall-timeout", \.stallTimeout, atLeast: 0.001, default: "30s",
                "How long a transfer may stay below 1 KiB/s before it is abandoned (whole seconds, at least 1)."),
            .duration(
                "timeout", \.timeout, atLeast: 0.001, default: "120s",
                "How long a whole transfer may take (and a wait for a fleet member's fetch)."),
            .number(
                "retries", \.retries, 0...100, default: "3",
                "Retries of transient failures (connect errors, resets, 5xx, 429), with exponential backoff."),
            .duration(
                "failure-memory", \.failureMemory, atLeast: 1, default: "10s",
                "How long a failure other than 404, 410 or an unknown host is answered without a new attempt "
                    + "(never longer than --negative-ttl)."),
            .number(
                "max-pixels", \.maxPixels, 1...1_000_000_000_000, default: "100000000",
                "thumb/ and fmt/ refuse (EFBIG) originals whose header announces more pixels, before decoding."),
            .number(
                "thumb-workers", \.thumbWorkers, 1...1024, default: "cores",
                "Threads making thumbnails and format views."),
            TuningKey(
                name: "thumb-crop", defaultValue: "centre",
                summary: "Where thumb/<W>x<H>/ crops the image scaled to cover W x H: the centre, or libvips's "
                    + "attention crop (the part with the most edges, skin tones and saturated colours).",
                expected: "one of " + VariantCrop.allCases.map(\.rawValue).joined(separator: ", ")
            ) { tuning, text in
                guard let crop = VariantCrop(rawValue: text.lowercased()) else { return false }
                tuning.thumbCrop = crop
                return true
            },
            .toggle(
                "desktop-thumbnails", \.desktopThumbnails, default: "off",
                "on: each list entry opened gets its normal/ and large/ thumbnails in the daemon user's "
                    + "$XDG_CACHE_HOME/thumbnails (as imgfs thumbnails --desktop writes them)."),
            .size(
                "shared-max-size", \.sharedMaxSize, default: "64M",
                "The largest body stored in the shared tier; larger ones are fetched by each mount."),
            .duration(
                "shared-timeout", \.sharedTimeout, atLeast: 0.001, default: "50ms",
                "How long a Redis command may take before imgfs uses the origin instead."),
            .duration(
                "shared-lease", \.sharedLease, atLeast: 0.1, default: "5s",
                "How long a mount's claim to fetch a URL for the fleet lasts once it stops renewing it.")
        ]
    }
}
