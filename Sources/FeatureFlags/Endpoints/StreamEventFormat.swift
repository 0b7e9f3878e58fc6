/// What an event of a stream an endpoint opens itself means, as that endpoint reads it.
package enum StreamEvent: Sendable, Equatable {
    /// Every value so far, shaped as the polling answer and served like one; `via` names the event.
    case values([String: FlagValue], via: String)
    /// Fetch through the polling endpoint: something changed, or the stream can't be followed.
    case fetch(via: String)
    /// An event whose data could not be read: it is dropped, the stream stays open.
    case malformed(event: String, reason: String)
}

/// Reads one connection's events, keeping what they gave; each connection gets a new reader.
package protocol StreamEventReader: Sendable {
    /// What `event` means; nil when it means nothing (an unknown or outdated event).
    mutating func read(_ event: ServerSentEvent) -> StreamEvent?
}

/// How an endpoint's stream events are read; formats are equal when their names are.
package struct StreamEventFormat: Sendable, Hashable {
    /// Names the format.
    package let name: String
    /// Whether the stream sends every value when it connects: its opening then asks for no fetch.
    package let sendsValuesOnConnect: Bool
    private let makeReader: @Sendable (_ maxBytes: Int) -> any StreamEventReader

    /// `maxBytes` caps the JSON weight of a reader's values; past it the reader asks for a fetch.
    package init(name: String, sendsValuesOnConnect: Bool, makeReader: @escaping @Sendable (_ maxBytes: Int) -> any StreamEventReader) {
        self.name = name
        self.sendsValuesOnConnect = sendsValuesOnConnect
        self.makeReader = makeReader
    }

    /// A reader for a new connection.
    package func reader(maxBytes: Int) -> any StreamEventReader { makeReader(maxBytes) }

    /// Equal when the names are.
    package static func == (a: StreamEventFormat, b: StreamEventFormat) -> Bool { a.name == b.name }

    /// Hashes the name.
    package func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// One `text/event-stream` event as the WHATWG HTML standard dispatches it.
package struct ServerSentEvent: Equatable, Sendable {
    /// The event type: the last `event:` field's value, or `message` when there was none.
    package var type: String
    /// The `data:` lines joined with line feeds.
    package var data: String
    /// The last event ID at dispatch time (it persists across events until an `id:` changes it).
    package var lastEventID: String

    /// An event of `type` carrying `data`.
    package init(type: String = "message", data: String, lastEventID: String = "") {
        self.type = type
        self.data = data
        self.lastEventID = lastEventID
    }
}
