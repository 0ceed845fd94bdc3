package configs

import "strata/proxy/accesslog"

// AccessLog is the access log: off while Path is empty.
type AccessLog struct {
	Path   string `yaml:"path"`   // file appended to; "-" is standard output; default "" (off)
	Format string `yaml:"format"` // combined | json; default combined
}

func (a *AccessLog) ensureDefaults() {
	setStr(&a.Format, accesslog.DefaultFormat)
}

func (a *AccessLog) validate(ps *problems) {
	checkEnum(ps, "access_log.format", a.Format, accesslog.FormatCombined, accesslog.FormatJSON)
}

// Options maps the access log's keys onto accesslog.Options; the binary
// adds its Registerer and Logger.
func (a AccessLog) Options() accesslog.Options {
	return accesslog.Options{Path: a.Path, Format: a.Format}
}
