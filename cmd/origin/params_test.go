package main

import (
	"testing"
	"time"
)

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		query [][2]string
		cc    string
		check func(p params) bool
	}{
		{nil, "", func(p params) bool { return p.status == 200 && p.truncate == -1 && p.etag == 0 }},
		{[][2]string{{"max-age", "60"}}, "max-age=60", nil},
		{[][2]string{{"no-store", ""}, {"private", ""}}, "private, no-store", nil},
		{[][2]string{{"no-store", "0"}}, "", nil},
		{[][2]string{{"s-maxage", "5"}, {"must-revalidate", "1"}, {"swr", "10"}, {"sie", "20"}},
			"s-maxage=5, must-revalidate, stale-while-revalidate=10, stale-if-error=20", nil},
		{[][2]string{{"etag", "w"}, {"lm", "1"}, {"version", "3"}}, "", func(p params) bool { return p.etag == 'w' && p.lm && p.version == 3 }},
		{[][2]string{{"delay", "150ms"}, {"rate", "64KiB"}, {"truncate", "0"}}, "",
			func(p params) bool { return p.delay == 150*time.Millisecond && p.rate == 64<<10 && p.truncate == 0 }},
		{[][2]string{{"tag", "a,b"}, {"hdr", "X-A: 1"}, {"n", "42"}}, "",
			func(p params) bool {
				return p.tags == "a b" && len(p.extra) == 1 && p.extra[0] == [2]string{"X-A", "1"}
			}},
		{[][2]string{{"hint", "</a.css>; rel=preload; as=style"}, {"hint", "<https://cdn.example>; rel=preconnect"}}, "",
			func(p params) bool { return len(p.hints) == 2 && p.hints[0] == "</a.css>; rel=preload; as=style" }},
	} {
		p, err := parseParams(tc.query)
		if err != nil {
			t.Errorf("%v: %v", tc.query, err)
			continue
		}
		if cc := p.cacheControl(); cc != tc.cc {
			t.Errorf("%v: Cache-Control %q, want %q", tc.query, cc, tc.cc)
		}
		if tc.check != nil && !tc.check(p) {
			t.Errorf("%v: parsed %+v", tc.query, p)
		}
	}
	for _, bad := range [][2]string{{"max-age", "-1"}, {"max-age", "x"}, {"status", "99"}, {"status", "600"},
		{"delay", "1h"}, {"delay", "-1s"}, {"rate", "0"}, {"rate", "fast"}, {"etag", "maybe"}, {"hdr", "novalue"},
		{"hdr", "X: a\r\nInjected: 1"}, {"truncate", "-5"}, {"hint", ""}, {"hint", "</a>\r\nX: 1"}} {
		if _, err := parseParams([][2]string{bad}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
