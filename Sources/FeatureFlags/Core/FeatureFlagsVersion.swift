/// The version of this package, as released and as its `CHANGELOG.md` names it. `flagctl
/// --version` prints it; an app can log it beside its own version.
package enum FeatureFlagsVersion {
    /// The semantic version of this release, e.g. `"0.6.0"`.
    package static let current = "0.6.0"
}
