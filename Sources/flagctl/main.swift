import FlagCtlCore
import Foundation

// flagctl: the FeatureFlags command-line tool. Everything lives in FlagCtlCore (tested
// in-process); this file only hands over the arguments and the exit status.
exit(await FlagCtl.run(Array(CommandLine.arguments.dropFirst())))
