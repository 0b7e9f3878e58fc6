import FeatureFlags
import Foundation

/// flagctl — the FeatureFlags command-line tool. Commands arrive with later issues; this
/// build answers help and version.
let version = "0.1.0"
let usage = """
    flagctl \(version) — feature flags that keep working offline

    USAGE: flagctl <command> [options]

    COMMANDS:
      demo       show flags surviving a relaunch offline, the kill switch and a damaged file
      eval       evaluate flags against an endpoint (coming)
      serve      run a loopback flag server on a flag document (coming)
      lint       check a flag document against a schema (coming)

    OPTIONS:
      -h, --help     show this help
      --version      print the version
    """

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case nil, "-h", "--help", "help":
    print(usage)
case "--version", "version":
    print(version)
case "demo":
    exit(FallbackDemo.run())
case let command?:
    let message = "flagctl: '\(command)' is not available in this build yet.\n\n\(usage)\n"
    FileHandle.standardError.write(Data(message.utf8))
    exit(64)
}
