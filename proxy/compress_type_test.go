package proxy

import (
	"bytes"
	"strings"
	"testing"
)

// refCompressType is compressType as first written, comparing every type
// with bytes.EqualFold: what the length-first version must answer.
func refCompressType(types []string, ct []byte) bool {
	mt, _, _ := bytes.Cut(ct, []byte(";"))
	mt = bytes.TrimSpace(mt)
	for _, t := range types {
		if p, ok := strings.CutSuffix(t, "/*"); ok {
			if len(mt) > len(p) && mt[len(p)] == '/' && bytes.EqualFold(mt[:len(p)], []byte(p)) {
				return true
			}
		} else if bytes.EqualFold(mt, []byte(t)) {
			return true
		}
	}
	return false
}

// foldTypes are configured types that match other spellings only under
// Unicode folding (the Kelvin sign folds to 'k', the long s to 's').
var foldTypes = append([]string{"application/x-\u212aml", "font/\u017ffnt", "image/*"}, DefaultCompressTypes...)

// TestCompressTypeFolding: compressType answers as bytes.EqualFold
// compares, for media types that match by length and those that match
// only under Unicode folding, on either side.
func TestCompressTypeFolding(t *testing.T) {
	for _, ct := range []string{
		"application/octet-stream", "application/json", "APPLICATION/JSON; charset=utf-8", "application/js",
		"application/jsonx", "application/x-kml", "application/x-KML", "font/sfnt", "font/SFNT", "font/\u017ffnt",
		"application/j\u017fon", "image/\u017fvg+xml", "image/svg+xml", "text/plain", "", "a", "\u212a",
		"application/vnd.ms-fontobject", "application/vnd.ms-fontobjec",
	} {
		for _, types := range [][]string{DefaultCompressTypes, foldTypes} {
			if got, want := compressType(types, []byte(ct)), refCompressType(types, []byte(ct)); got != want {
				t.Errorf("%q: %v, want %v", ct, got, want)
			}
		}
	}
}

// FuzzCompressType: compressType answers as bytes.EqualFold compares, for
// any Content-Type.
func FuzzCompressType(f *testing.F) {
	f.Add("application/j\u017fon")
	f.Add("application/x-kml; q=1")
	f.Fuzz(func(t *testing.T, ct string) {
		for _, types := range [][]string{DefaultCompressTypes, foldTypes} {
			if got, want := compressType(types, []byte(ct)), refCompressType(types, []byte(ct)); got != want {
				t.Fatalf("%q: %v, want %v", ct, got, want)
			}
		}
	})
}
