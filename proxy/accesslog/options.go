package accesslog

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Formats.
const (
	FormatCombined = "combined"
	FormatJSON     = "json"
)

// Defaults.
const (
	DefaultFormat      = FormatCombined
	DefaultBufferLines = 8192
)

// Options configure a Log.
type Options struct {
	// Path is the file lines are appended to (created 0644 if missing);
	// "-" is standard output (Stdout). Required.
	Path string
	// Format is combined or json. Default combined.
	Format string
	// BufferLines bounds what waits for the writer, counted as lines of
	// 256 bytes (Default 8192: 2 MiB, allocated at Open); beyond it lines
	// are dropped and counted.
	BufferLines int
	// Registerer receives the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Logger receives write and reopen errors. Default slog.Default().
	Logger *slog.Logger
	// Stdout is where Path "-" writes. Default os.Stdout.
	Stdout io.Writer
}

// EnsureDefaults fills the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.Format == "" {
		o.Format = DefaultFormat
	}
	if o.BufferLines == 0 {
		o.BufferLines = DefaultBufferLines
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Validate reports every problem of o.
func (o *Options) Validate() error {
	var errs []error
	if o.Path == "" {
		errs = append(errs, ErrPath)
	}
	if o.Format != FormatCombined && o.Format != FormatJSON {
		errs = append(errs, fmt.Errorf("%w %q (want combined or json)", ErrFormat, o.Format))
	}
	if o.BufferLines < 0 {
		errs = append(errs, fmt.Errorf("accesslog: BufferLines %d must be > 0", o.BufferLines))
	}
	if len(errs) == 0 {
		return nil
	}
	return joinErrs(errs)
}
