/// This package's version, as `CHANGELOG.md` names it (`flagctl --version` prints it).
package enum FeatureFlagsVersion {
    /// The semantic version of this release, e.g. `"0.6.0"`.
    package static let current = "0.6.0"
}
