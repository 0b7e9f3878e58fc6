import Foundation

/// Signed at rest for a merged identity: with trusted keys, its values are made again from its
/// members' checked answers (the checks are ``LastKnownGoodReader``'s, shared with
/// ``FallbackClient``; Docs/Security.md, "Signed flags").
extension FeatureFlagProvider {
    /// A merged identity's values when keys are trusted. Its stored snapshot is a merge, signed
    /// by no one, so it is not served as it is: the merge is made again from the members' stored
    /// snapshots, each checked as a single context's is. Nil when a member holds no snapshot or
    /// one that fails its check; `tampered` names those that fail, and `problems` says why (the
    /// caller sets them aside).
    func verifiedMerge(
        of members: [EvaluationContext], as identity: EvaluationContext
    ) -> (merged: FlagSnapshot?, tampered: [EvaluationContext], problems: [String]) {
        LastKnownGoodReader.verifiedMerge(
            of: members, as: identity, fetcher: fetcher, store: store, merge: configuration.merge, killSwitchKey: base.killSwitchKey)
    }
}
