import Foundation

@testable import FeatureFlags

extension ProviderEffect {
    /// A short label, for the tests of the transitions.
    var label: String {
        switch self {
        case .publish: return "publish"
        case .emit(let event): return "emit \(event.kind.name)"
        case .startFetch: return "startFetch"
        case .cancel: return "cancel"
        case .answer(_, let outcome): return "answer \(outcome.name)"
        case .resume: return "resume"
        case .wake: return "wake"
        case .keepMembers: return "keepMembers"
        case .holdKill(let hold): return hold == nil ? "releaseKill" : "holdKill"
        case .persist: return "persist"
        case .complete(_, let outcome, let latency): return "complete \(outcome.name)\(latency == nil ? " silently" : "")"
        case .stop: return "stop"
        case .setStreams(let links): return "setStreams \(links.count)"
        case .scheduleInactivity: return "scheduleInactivity"
        case .scheduleStreamWait: return "scheduleStreamWait"
        case .reschedule: return "reschedule"
        case .writeJournal: return "writeJournal"
        }
    }}
