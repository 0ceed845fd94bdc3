package accesslog

import (
	"encoding/binary"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Entry is one request as the log records it. The byte slices are
// borrowed: valid only during Log.Write, which copies what it keeps.
type Entry struct {
	Time      time.Time  // when the request arrived
	Remote    netip.Addr // the client's address
	Conn      uint64     // the client connection's id: lines of one share a buffer (any value will do)
	Method    []byte
	URI       []byte // the request target as sent
	Proto     []byte // "HTTP/1.1"
	Referer   []byte
	UserAgent []byte
	Status    int
	Bytes     int64         // body bytes of the response; 0 for HEAD, 304 and 204
	Duration  time.Duration // from arrival to the response handed to the connection

	CacheStatus string // hit, miss, stale, bypass, error (strata_requests_total's labels)
	Detail      string // the Cache-Status value after "strata; "
	Tier        string // memory, disk, or none

	OriginStatus   int           // 0: the request did not wait for the origin
	OriginDuration time.Duration // time to the origin's response headers
}

const (
	combinedTime = "02/Jan/2006:15:04:05 -0700"
	jsonTime     = "2006-01-02T15:04:05.000Z07:00"
	jsonSecond   = "2006-01-02T15:04:05" // jsonTime up to the second
	jsonZone     = "Z07:00"              // and its zone
)

// stamp is one second's timestamps, formatted once: formatting the time
// was a third of the cost of a combined line (the CPU profile of 1 KiB
// hits with the log on). Lines of the same second and location share it.
// A JSON line's time is its head (the line's opening up to the second
// and its dot), three digits of milliseconds and its tail (the zone and
// the remote key), so that a line opens with three appends.
type stamp struct {
	sec        int64
	loc        *time.Location
	combined   [32]byte
	head, tail [48]byte
	nc, nh, nt int
}

const (
	jsonHead = `{"time":"`
	jsonTail = `","remote":"`
)

var lastStamp atomic.Pointer[stamp]

// stampOf returns t's second's stamp, from the cache or made now.
func stampOf(t time.Time) *stamp {
	if s := lastStamp.Load(); s != nil && s.sec == t.Unix() && s.loc == t.Location() {
		return s
	}
	s := &stamp{sec: t.Unix(), loc: t.Location()}
	s.nc = len(t.AppendFormat(s.combined[:0], combinedTime))
	s.nh = len(append(t.AppendFormat(append(s.head[:0], jsonHead...), jsonSecond), '.'))
	s.nt = len(append(t.AppendFormat(s.tail[:0], jsonZone), jsonTail...))
	lastStamp.Store(s)
	return s
}

// AppendCombined appends e as one NCSA combined line (Apache's
// "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-agent}i\"") and a
// newline: an empty referer or user agent is "-", a body of 0 bytes is
// "-" as %b writes it, and quotes, backslashes and bytes outside
// printable ASCII in the quoted fields are escaped as Apache escapes
// them (\", \\, \xhh), so a line is always one line.
func AppendCombined(dst []byte, e *Entry) []byte {
	dst = appendAddr(dst, e.Remote)
	dst = append(dst, " - - ["...)
	st := stampOf(e.Time)
	dst = append(dst, st.combined[:st.nc]...)
	dst = append(dst, "] \""...)
	dst = appendEscaped(dst, e.Method)
	dst = append(dst, ' ')
	dst = appendEscaped(dst, e.URI)
	dst = append(dst, ' ')
	dst = appendEscaped(dst, e.Proto)
	dst = append(dst, "\" "...)
	dst = appendStatus(dst, e.Status)
	dst = append(dst, ' ')
	if e.Bytes > 0 {
		dst = strconv.AppendInt(dst, e.Bytes, 10)
	} else {
		dst = append(dst, '-')
	}
	dst = append(dst, " \""...)
	dst = appendOrDash(dst, e.Referer)
	dst = append(dst, "\" \""...)
	dst = appendOrDash(dst, e.UserAgent)
	return append(dst, "\"\n"...)
}

func appendAddr(dst []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return append(dst, '-')
	}
	return a.Unmap().AppendTo(dst)
}

func appendOrDash(dst, b []byte) []byte {
	if len(b) == 0 {
		return append(dst, '-')
	}
	return appendEscaped(dst, b)
}

const hexDigits = "0123456789abcdef"

func appendEscaped(dst, b []byte) []byte {
	for len(b) > 0 {
		i := plainWords(b2s(b), true)
		for i < len(b) && combinedPlain[b[i]] {
			i++
		}
		dst = append(dst, b[:i]...) // the run that needs no escape, at once
		if i == len(b) {
			break
		}
		switch c := b[i]; c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&0xf])
		}
		b = b[i+1:]
	}
	return dst
}

// combinedPlain and jsonPlain tell the bytes a combined quoted field and a
// JSON string take as they are (printable ASCII but for '"' and '\\', and
// DEL for JSON; bytes from 0x80 are escaped in combined lines and checked
// as UTF-8 in JSON, so they are not plain): a table lookup per byte
// instead of four comparisons.
var combinedPlain, jsonPlain = plainTables()

func plainTables() (combined, json [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		combined[c] = c != '"' && c != '\\'
		json[c] = combined[c]
	}
	json[0x7f] = true // DEL is a control character only to Apache
	return combined, json
}

// plainWords returns the length of s's longest prefix of whole 8-byte
// words whose bytes need no escape: printable ASCII but for '"' and '\\',
// and DEL too unless del (the combinedPlain and jsonPlain tables, a word
// at a time: the byte loops cost half of formatting a JSON line). Each
// test is exact for a whole word (a byte's borrow reaches the next only
// when the byte itself is caught), so no word with an escape is taken.
func plainWords(s string, del bool) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		q, bs := w^(ones*'"'), w^(ones*'\\')
		bad := w | (w-ones*0x20)&^w | (q-ones)&^q | (bs-ones)&^bs
		if del {
			d := w ^ (ones * 0x7f)
			bad |= (d - ones) &^ d
		}
		if bad&highs != 0 {
			break
		}
	}
	return i
}

// AppendJSON appends e as one JSON object and a newline. Fields: time
// (RFC 3339, milliseconds), remote, method, uri, proto, status, bytes,
// duration_ms, cache_status, cache_detail, tier, referer, user_agent,
// and origin_status and origin_ms when the request waited for the
// origin. Strings are escaped per RFC 8259; invalid UTF-8 becomes U+FFFD.
//
// Each key is one constant with the punctuation around it, so a field
// is two appends (JSON lines are three times as long as combined ones,
// and in the CPU profile of 1 KiB hits formatting one cost four times as
// much as a combined line until the keys were appended whole).
func AppendJSON(dst []byte, e *Entry) []byte {
	st := stampOf(e.Time)
	dst = append(dst, st.head[:st.nh]...)
	ms := uint(e.Time.Nanosecond()) / uint(time.Millisecond)
	dst = append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	dst = append(dst, st.tail[:st.nt]...)
	if e.Remote.IsValid() {
		dst = e.Remote.Unmap().AppendTo(dst)
	}
	dst = append(dst, `","method":"`...)
	dst = appendJSONString(dst, b2s(e.Method))
	dst = append(dst, `","uri":"`...)
	dst = appendJSONString(dst, b2s(e.URI))
	dst = append(dst, `","proto":"`...)
	dst = appendJSONString(dst, b2s(e.Proto))
	dst = append(dst, `","status":`...)
	dst = appendStatus(dst, e.Status)
	dst = append(dst, `,"bytes":`...)
	dst = strconv.AppendInt(dst, max(e.Bytes, 0), 10)
	dst = append(dst, `,"duration_ms":`...)
	dst = appendMillis(dst, e.Duration)
	dst = append(dst, `,"cache_status":"`...)
	dst = appendJSONString(dst, e.CacheStatus)
	dst = append(dst, `","cache_detail":"`...)
	dst = appendJSONString(dst, e.Detail)
	dst = append(dst, `","tier":"`...)
	dst = appendJSONString(dst, e.Tier)
	dst = append(dst, `","referer":"`...)
	dst = appendJSONString(dst, b2s(e.Referer))
	dst = append(dst, `","user_agent":"`...)
	dst = appendJSONString(dst, b2s(e.UserAgent))
	if e.OriginStatus == 0 {
		return append(dst, "\"}\n"...)
	}
	dst = append(dst, `","origin_status":`...)
	dst = appendStatus(dst, e.OriginStatus)
	dst = append(dst, `,"origin_ms":`...)
	dst = appendMillis(dst, e.OriginDuration)
	return append(dst, "}\n"...)
}

// appendStatus appends an HTTP status: three digits at once when it has
// three, as every status a server sends does (RFC 9110 section 15).
func appendStatus(dst []byte, s int) []byte {
	if s < 100 || s > 999 {
		return strconv.AppendInt(dst, int64(s), 10)
	}
	u := uint(s)
	return append(dst, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
}

func appendMillis(dst []byte, d time.Duration) []byte {
	ns := uint64(max(d, 0)) // unsigned: division by a constant without sign fixes
	us, rem := ns/1000, ns%1000
	if rem == 500 || us >= 1<<40 {
		// A tie (or a duration of years): the float's rounding decides,
		// as it always did.
		return strconv.AppendFloat(dst, float64(ns)/1e6, 'f', 3, 64)
	}
	if rem > 500 {
		us++
	}
	if whole := us / 1000; whole < 10 {
		dst = append(dst, byte('0'+whole)) // under 10 ms: most requests
	} else {
		dst = strconv.AppendUint(dst, whole, 10)
	}
	f := us % 1000
	return append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

// appendJSONString appends s's characters escaped for a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		j := i + plainWords(s[i:], false)
		for j < len(s) && jsonPlain[s[j]] {
			j++
		}
		dst = append(dst, s[i:j]...) // the run that needs no escape, at once
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '"' || c == '\\' {
				dst = append(dst, '\\', c)
			} else {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// b2s views b as a string without copying it. REQUIRES: b is not
// modified while the string is in use (here: during one Append call).
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
