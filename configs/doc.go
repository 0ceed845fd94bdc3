// Package configs holds strata's YAML configs (default.yaml, embedded as
// Default; edge.yaml; shield.yaml) and the Config type they decode into.
//
// Only the binaries (cmd/...) and the e2e tests import this package
// (STYLE.md rule 1); the engine packages take their own Options, composed
// from a Config by cmd/proxy.
//
// Loading. Load decodes strictly (yaml.v3 with KnownFields: an unknown key
// is an error), fills defaults (EnsureDefaults) and validates. It reports
// every problem at once, each with the file name and the line of the key it
// concerns, as a Problems value that wraps ErrInvalid; `strata
// -check-config` prints them one per line. Validate never touches the file
// system or the network: a missing ca_file or cert_file is found when the
// binary starts.
//
// Units. Sizes are integers (bytes) or strings such as "64MiB" (ParseSize:
// k/Ki/KiB are 1024, kB/KB are 1000); rates are sizes per second
// ("64MiB/s"); durations are Go duration strings ("30s", "24h"). A zero or
// absent value means "the default" everywhere; each field's comment names
// its default, and default.yaml spells every one out.
package configs
