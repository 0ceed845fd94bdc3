package configs

import (
	"strings"

	"strata/proxy"
)

// Edge tunes what strata does for browsers and CDN clients at the edge:
// compression of what the origin sends uncompressed (proxy/compress.go)
// and the origin's 103 Early Hints (proxy/early_hints.go).
type Edge struct {
	Compress        *bool    `yaml:"compress"`          // compress at the edge; default true
	CompressTypes   []string `yaml:"compress_types"`    // media types ("type/sub" or "type/*"); default proxy.DefaultCompressTypes
	CompressMinSize Size     `yaml:"compress_min_size"` // smaller bodies are left alone; default 1KiB
	CompressMaxSize Size     `yaml:"compress_max_size"` // larger bodies are left alone; default 8MiB
	GzipLevel       int      `yaml:"gzip_level"`        // 1..9; default 6
	BrotliQuality   int      `yaml:"brotli_quality"`    // 1..11; default 6
	EarlyHints      *bool    `yaml:"early_hints"`       // forward the origin's 103 to the fill's client; default false
}

func (e *Edge) ensureDefaults() {
	if e.Compress == nil {
		t := true
		e.Compress = &t
	}
	if e.EarlyHints == nil {
		f := false // off by default, as nginx's early_hints: see README
		e.EarlyHints = &f
	}
	if len(e.CompressTypes) == 0 {
		e.CompressTypes = append([]string(nil), proxy.DefaultCompressTypes...)
	}
	setSize(&e.CompressMinSize, proxy.DefaultCompressMinSize)
	setSize(&e.CompressMaxSize, proxy.DefaultCompressMaxSize)
	setInt(&e.GzipLevel, proxy.DefaultCompressGzipLevel)
	setInt(&e.BrotliQuality, proxy.DefaultCompressBrotliQuality)
}

func (e *Edge) validate(ps *problems) {
	checkRange(ps, "edge.compress_min_size", int64(e.CompressMinSize), 0, 1<<30)
	checkRange(ps, "edge.compress_max_size", int64(e.CompressMaxSize), 0, 1<<30)
	checkRange(ps, "edge.gzip_level", int64(e.GzipLevel), 1, 9)
	checkRange(ps, "edge.brotli_quality", int64(e.BrotliQuality), 1, 11)
	for _, t := range e.CompressTypes {
		if a, b, ok := strings.Cut(t, "/"); !ok || a == "" || b == "" || strings.ContainsAny(t, " ;,") {
			ps.add("edge.compress_types", "%q: want type/subtype or type/*", t)
		}
	}
}

// compressOptions maps the keys onto proxy.CompressOptions.
func (e *Edge) compressOptions() proxy.CompressOptions {
	return proxy.CompressOptions{
		Disable:       e.Compress != nil && !*e.Compress,
		Types:         e.CompressTypes,
		MinSize:       int(e.CompressMinSize),
		MaxSize:       int64(e.CompressMaxSize),
		GzipLevel:     e.GzipLevel,
		BrotliQuality: e.BrotliQuality,
	}
}
