package accesslog

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"
)

// The escapers and appendMillis copy runs and format integers for speed;
// these tests hold them to the byte-at-a-time and float formatting they
// replaced, so the lines stay byte for byte what they were.

func escapedByByte(dst, b []byte) []byte {
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20 || c >= 0x7f:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func jsonByByte(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

func FuzzEscapers(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b\c`, "\x00\x1f\x7f\x80\xff", "√ü\xe2\x88", "ends with quote\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := appendEscaped([]byte("p"), b), escapedByByte([]byte("p"), b); string(got) != string(want) {
			t.Fatalf("appendEscaped(%q) = %q, want %q", b, got, want)
		}
		if got, want := appendJSONString([]byte("p"), b2s(b)), jsonByByte([]byte("p"), b); string(got) != string(want) {
			t.Fatalf("appendJSONString(%q) = %q, want %q", b, got, want)
		}
		// The UTF-8 handling is the same code in both: hold it to
		// encoding/json too, which must read back b with each byte of
		// invalid UTF-8 replaced by U+FFFD (as ranging over a string does).
		got := appendJSONString([]byte{'"'}, b2s(b))
		var dec string
		if err := json.Unmarshal(append(got, '"'), &dec); err != nil || !utf8.Valid(got) || dec != string([]rune(string(b))) {
			t.Fatalf("appendJSONString(%q) = %q: encoding/json reads %q (%v), want %q", b, got[1:], dec, err, string([]rune(string(b))))
		}
	})
}

func TestAppendMillis(t *testing.T) {
	float := func(d time.Duration) string {
		return string(strconv.AppendFloat(nil, float64(max(d, 0))/1e6, 'f', 3, 64))
	}
	ds := []time.Duration{-1, 0, 1, 499, 500, 501, 999, 1000, 1499, 1500, 1_234_500, 1_234_501, 9_999_499,
		9_999_500, 9_999_501, time.Second, time.Hour + 500, 1<<40*time.Microsecond + 123_456, 1<<62 + 777}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		ds = append(ds, time.Duration(r.Int64N(int64(time.Hour))), time.Duration(r.Int64N(int64(10*time.Millisecond))))
	}
	for _, d := range ds {
		if got, want := string(appendMillis(nil, d)), float(d); got != want {
			t.Fatalf("appendMillis(%d) = %s, want %s", int64(d), got, want)
		}
	}
}

// TestEscapersEveryByteEveryPlace: each byte value at each place of a
// string of whole words and a tail is escaped as byte at a time would
// (the word-at-a-time scan must stop at any of them).
func TestEscapersEveryByteEveryPlace(t *testing.T) {
	for c := range 256 {
		for at := range 19 {
			b := []byte("abcdefghijklmnopqrs")
			b[at] = byte(c)
			if got, want := appendEscaped(nil, b), escapedByByte(nil, b); string(got) != string(want) {
				t.Fatalf("appendEscaped(%q) = %q, want %q", b, got, want)
			}
			if got, want := appendJSONString(nil, b2s(b)), jsonByByte(nil, b); string(got) != string(want) {
				t.Fatalf("appendJSONString(%q) = %q, want %q", b, got, want)
			}
		}
	}
}
