import FlagCtlCore

// flagctl: the FeatureFlags command-line tool. Everything lives in FlagCtlCore (tested
// in-process); this file only hands over to it.
await FlagCtl.main()
