package configs

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written in YAML as a Go duration string
// ("30s", "1m30s", "24h") or the integer 0.
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses a Go duration string; a bad one is a yaml.TypeError
// with the node's line, so decoding continues.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErr(n, "want a duration such as 30s, got a %s", kindName(n.Kind))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return typeErr(n, "bad duration %q: want a Go duration such as 30s, 5m or 24h", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }
