import ImgfsModel

// MARK: - Warming: loading an image nobody asked for yet, and hearing when it is cached

extension ImageRepository {
    /// How a warmed image ended.
    public enum WarmResult: Sendable, Equatable {
        /// It was cached already (fresh, or revalidated without a new body): its size.
        case cached(Int)
        /// Its transfer (started now, or joined) completed: its size.
        case fetched(Int)
        /// It failed, or is remembered as failed.
        case failed(FetchError)
    }

    /// Starts whatever `url` needs to be cached, at `priority` (a transfer under way is joined and never lowered), and
    /// calls `done` once when it is: at once (on the caller's thread) when it was cached or is remembered as failed,
    /// else when its transfer ends. Nobody waits for the body: the transfer is admitted after every more urgent one.
    public func warm(
        _ url: ImageURL, priority: FetchPriority = .background,
        done: @escaping @Sendable (WarmResult) -> Void
    ) {
        func finished(_ download: Download) {
            download.whenFinished { error in
                if let error { return done(.failed(error)) }
                done(.fetched(download.currentMetadata?.size ?? 0))
            }
        }
        switch resolveNow(url, refresh: true, priority: priority) {
        case .ready(.failure(let error)): done(.failed(error))
        case .ready(.success(.download(let download))): finished(download)
        case .ready(.success(let source)): done(.cached(source.metadata?.size ?? 0))
        case .revalidating(let download, _): finished(download)
        }
    }

    /// Warming of `url` is called off: its transfer stops unless someone has the image open or waits for it, or more
    /// than half of it has arrived (``readerGaveUp(_:openHandles:)``, with the handles open now).
    public func warmingCalledOff(_ url: ImageURL) {
        readerGaveUp(url, openHandles: openHandles(url))
    }
}
