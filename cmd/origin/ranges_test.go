package main

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	syntax, unsat := errRangeSyntax, errRangeUnsatisfiable
	for _, tc := range []struct {
		h    string
		size int64
		want []byteRange
		err  error
	}{
		{"bytes=0-9", 100, []byteRange{{0, 9}}, nil},
		{"bytes=90-", 100, []byteRange{{90, 99}}, nil},
		{"bytes=-10", 100, []byteRange{{90, 99}}, nil},
		{"bytes=-1000", 100, []byteRange{{0, 99}}, nil},
		{"bytes=50-1000", 100, []byteRange{{50, 99}}, nil},
		{"bytes=0-0, 5-9 ,-1", 100, []byteRange{{0, 0}, {5, 9}, {99, 99}}, nil},
		{"bytes=200-300, 0-1", 100, []byteRange{{0, 1}}, nil}, // a miss among hits is dropped
		{"bytes=100-", 100, nil, unsat},
		{"bytes=-0", 100, nil, unsat},
		{"bytes=0-", 0, nil, unsat},
		{"bytes=-5", 0, nil, unsat},
		{"bytes=" + strings.Repeat("0-1,", maxRanges) + "0-1", 100, nil, unsat},
		{"bytes=9-0", 100, nil, syntax},
		{"bytes=a-b", 100, nil, syntax},
		{"bytes=1", 100, nil, syntax},
		{"bytes=+1-2", 100, nil, syntax},
		{"bytes=", 100, nil, syntax},
		{"bytes=0-1,", 100, nil, syntax},
		{"items=0-1", 100, nil, syntax},
		{"bytes=99999999999999999999-", 100, nil, syntax},
	} {
		got, err := parseRange(tc.h, tc.size)
		if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("parseRange(%q, %d) err = %v, want %v", tc.h, tc.size, err, tc.err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("parseRange(%q, %d) = %v, want %v", tc.h, tc.size, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseRange(%q, %d) = %v, want %v", tc.h, tc.size, got, tc.want)
			}
		}
	}
}

// TestMultipart: the multipart layout parses back with mime/multipart and
// each part holds the right bytes and Content-Range.
func TestMultipart(t *testing.T) {
	seed := contentSeed("/obj/1k", 0, "")
	obj := make([]byte, 1024)
	fill(obj, seed, 0)
	rs := []byteRange{{0, 3}, {1000, 1023}, {2, 2}}
	b := &body{seed: seed, stats: newStats(1), segs: multipartSegments(rs, 1024, "BND", "application/octet-stream")}
	raw, _ := io.ReadAll(b)
	if int64(len(raw)) != (&body{segs: multipartSegments(rs, 1024, "BND", "application/octet-stream")}).Len() {
		t.Fatal("Len disagrees with the bytes")
	}
	mr := multipart.NewReader(bytes.NewReader(raw), "BND")
	for i, r := range rs {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		data, _ := io.ReadAll(part)
		if !bytes.Equal(data, obj[r.start:r.end+1]) || part.Header.Get("Content-Range") != contentRange(r, 1024) {
			t.Fatalf("part %d: %q %q", i, part.Header.Get("Content-Range"), data)
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Fatalf("after the last part: %v", err)
	}
}

// FuzzParseRange: no panics, and every range returned lies inside the object.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=0-0,5-9,-1", "bytes=9-0", "bytes=,", "bytes=--1"} {
		f.Add(s, int64(100))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		size %= 1 << 40
		rs, err := parseRange(h, size)
		if err != nil {
			return
		}
		if len(rs) == 0 || len(rs) > maxRanges {
			t.Fatalf("%d ranges", len(rs))
		}
		for _, r := range rs {
			if r.start < 0 || r.end < r.start || r.end >= size {
				t.Fatalf("parseRange(%q, %d) gave %v", h, size, r)
			}
		}
	})
}
