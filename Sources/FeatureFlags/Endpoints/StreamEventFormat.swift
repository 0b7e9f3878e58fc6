/// What an event of a stream an endpoint opens itself means, as that endpoint reads it.
package enum StreamEvent: Sendable, Equatable {
    /// Every value the stream has given so far, in the shape of the endpoint's polling answer:
    /// read and served as a fetched answer would be. `via` names the event.
    case values([String: FlagValue], via: String)
    /// Fetch through the polling endpoint (`via` names the event): the stream said something
    /// changed without saying what, or what it gave can no longer be followed.
    case fetch(via: String)
    /// An event whose data could not be read: it is dropped, the stream stays open.
    case malformed(event: String, reason: String)
}

/// Reads the events of one connection of a stream an endpoint opens: keeps what they gave since
/// the connection opened, and says what each means. A new connection gets a new reader.
package protocol StreamEventReader: Sendable {
    /// What `event` means; nil when it means nothing (an unknown or outdated event).
    mutating func read(_ event: ServerSentEvent) -> StreamEvent?
}

/// How the events of a stream an endpoint opens are read: a name (two streams compare equal
/// when their formats' names do) and a reader for each connection.
package struct StreamEventFormat: Sendable, Hashable {
    /// Names the format.
    package let name: String
    /// Whether the stream sends every value when it connects: its opening then asks for no fetch.
    package let sendsValuesOnConnect: Bool
    private let makeReader: @Sendable (_ maxBytes: Int) -> any StreamEventReader

    /// A format named `name`, whose readers `makeReader` makes; `maxBytes` is the most the
    /// values a reader keeps may weigh as JSON (the fetcher's answer cap): past it, a reader
    /// asks for a fetch instead.
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

/// One event of a `text/event-stream`, as the WHATWG HTML standard's event-stream
/// interpretation dispatches it.
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
