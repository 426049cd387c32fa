// Package configs is the daemon's configuration: one typed, validated Config read from a YAML file,
// GBDMPC_* environment variables and command-line overrides.
//
// viper stays inside Load; everything else in gbdmpc sees only Config. Precedence, highest first:
// explicit overrides (Source.Overrides), changed command-line flags (Source.Flags, registered with
// RegisterFlags), environment variables, the YAML file, the defaults of this package.
//
// Environment variables name a key with its dots replaced by underscores, upper-cased, after the
// GBDMPC_ prefix: broker.url is GBDMPC_BROKER_URL, broker.tls.ca_file is GBDMPC_BROKER_TLS_CA_FILE.
// The plants list can only come from the file (or Overrides), since a list has no scalar key.
//
// Relative paths in the file (TLS files, the password file, policy files, the decision-log
// directory) are resolved against the directory of the configuration file, so a config and its
// policy files can move together.
//
// Durations are strings with a unit ("200ms", "15m"). A bare number is refused because YAML would
// read "period: 900" as 900 nanoseconds, which is never what was meant.
//
// Secrets (the broker password) are of type Secret, which prints, marshals and logs as "<redacted>";
// Config.Redacted is the view to log. Load reads no secret file: Broker.ResolvePassword does, at
// connect time, so a rotated password file is picked up by the next connection.
package configs
