import Foundation

/// The change streams a provider keeps open, one ``ChangeStream`` per advertised link.
final class StreamSet: Sendable {
    /// The open streams by link (in a struct to spare a launch-time conformance lookup).
    private struct Open {
        var streams: [EventStreamLink: ChangeStream] = [:]
        /// Where signals go (holding its owner weakly, so that open streams do not keep it alive).
        var deliver: (@Sendable (ChangeStream.Signal, EventStreamLink) -> Void)?
    }

    private let open = Locked(Open())
    private let configuration: ChangeStream.Configuration
    private let sameOriginHeaders: [String: String]
    /// The largest event a value-carrying stream may send (the fetcher's answer cap).
    private let maxValueBytes: Int

    /// `sameOriginHeaders` (credentials) go only to streams on the flag service's own origin.
    init(configuration: ChangeStream.Configuration, sameOriginHeaders: [String: String], maxValueBytes: Int = 1 << 20) {
        self.configuration = configuration
        self.sameOriginHeaders = sameOriginHeaders
        self.maxValueBytes = maxValueBytes
    }

    /// Sends every stream's signals to `deliver` from now on.
    func connect(_ deliver: @escaping @Sendable (ChangeStream.Signal, EventStreamLink) -> Void) {
        open.withLock { $0.deliver = deliver }
    }

    /// Hands a stream's signal on, outside the lock.
    private func deliver(_ signal: ChangeStream.Signal, from link: EventStreamLink) {
        open.withLock { $0.deliver }?(signal, link)
    }

    /// Keeps exactly `links` open.
    func set(_ links: [EventStreamLink]) {
        let (closing, opening): ([ChangeStream], [ChangeStream]) = open.withLock { state in
            if state.streams.isEmpty, links.isEmpty { return ([], []) }
            let wanted = Set(links)
            let closing = state.streams.filter { !wanted.contains($0.key) }
            for key in closing.keys { state.streams[key] = nil }
            var opening: [ChangeStream] = []
            for link in links where state.streams[link] == nil {
                var configuration = self.configuration
                if link.sameOrigin { configuration.headers = sameOriginHeaders }
                if let connection = link.connection {
                    // Values travel in its events: they count against the answers' size cap.
                    configuration.connection = connection
                    configuration.maxEventBytes = maxValueBytes
                }
                let stream = ChangeStream(url: link.url, configuration: configuration) { [weak self] in self?.deliver($0, from: link) }
                state.streams[link] = stream
                opening.append(stream)
            }
            return (Array(closing.values), opening)
        }
        for stream in closing { stream.shutdown() }
        for stream in opening { stream.start() }
    }

    /// How many streams are open (connected, connecting or waiting to reconnect).
    var count: Int { open.withLock { $0.streams.count } }
}
