package httpcache

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestParseAge(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"§5.1 delta-seconds", "60", 60, true},
		{"§5.1 zero", "0", 0, true},
		{"§1.2.2 overflow is 2^31", "99999999999999999999", 1 << 31, true},
		{"§1.2.2 just over 2^31", "2147483649", 1 << 31, true},
		{"§5.1 whitespace trimmed", " 7 ", 7, true},
		{"§5.1 empty is invalid", "", 0, false},
		{"§5.1 negative is invalid", "-7200", 0, false},
		{"§5.1 float is invalid", "7200.0", 0, false},
		{"§5.1 non-numeric is invalid", "abc", 0, false},
		{"§5.1 parameters are not delta-seconds", "7200;foo=bar", 0, false},
		{"§5.1 numeric parameter too", "7200;foo=111", 0, false},
		{"§5.1 list: the first member, old first", "7200,0", 7200, true},
		{"§5.1 list: the first member, 0 first", "0,7200", 0, true},
		{"§5.1 list: 0, 0", "0, 0", 0, true},
		{"§5.1 list: duplicates", "3600, 3600", 3600, true},
		{"§5.1 later members are discarded, even bad ones", "5, x", 5, true},
		{"§5.1 a bad first member makes the field invalid", "x, 5", 0, false},
		{"RFC 9110 §5.6.1 empty elements do not count", " , ,9", 9, true},
		{"§5.1 only commas is invalid", " , ", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseAge([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseAge(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCurrentAge(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }
	tests := []struct {
		name                 string
		age                  int64
		date, req, resp, now time.Time
		want                 time.Duration
	}{
		{"§4.2.3 fresh from origin", 0, s(0), s(0), s(0), s(0), 0},
		{"§4.2.3 resident time", 0, s(0), s(0), s(0), s(10), 10 * time.Second},
		{"§4.2.3 Age plus response delay", 100, s(0), s(0), s(2), s(2), 102 * time.Second},
		{"§4.2.3 apparent age wins when larger", 10, s(-60), s(0), s(0), s(0), 60 * time.Second},
		{"§4.2.3 corrected age wins when larger", 100, s(-60), s(0), s(1), s(5), 105 * time.Second},
		{"§4.2.3 Date in the future: apparent age 0", 0, s(60), s(0), s(0), s(3), 3 * time.Second},
		{"§4.2.3 no Date: apparent age 0", 5, time.Time{}, s(0), s(0), s(0), 5 * time.Second},
		{"clock stepped back: never below the initial age", 5, s(0), s(0), s(0), s(-100), 5 * time.Second},
		{"request after response: delay 0", 5, s(0), s(10), s(0), s(0), 5 * time.Second},
		{"§1.2.2 huge Age does not overflow", 1 << 40, s(0), s(0), s(0), s(1), (1<<31 + 1) * time.Second},
		{"extreme times saturate", 1 << 31, time.Unix(-1<<62, 0), s(0), time.Unix(1<<62, 0), time.Unix(1<<62, 0).Add(time.Hour), 1<<63 - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CurrentAge(tt.age, tt.date, tt.req, tt.resp, tt.now); got != tt.want {
				t.Errorf("CurrentAge = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestResponseAge: several Age lines are one list (RFC 9110 §5.3); its
// first member counts (RFC 9111 §5.1), an invalid one means no Age.
func TestResponseAge(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  int64
	}{
		{"absent", nil, 0},
		{"one line", []string{"60"}, 60},
		{"§5.1 first line old", []string{"7200", "0"}, 7200},
		{"§5.1 first line 0", []string{"0", "7200"}, 0},
		{"§5.1 two lines of 0", []string{"0", "0"}, 0},
		{"§5.1 two equal lines", []string{"3600", "3600"}, 3600},
		{"§5.1 invalid first member: ignored", []string{"abc", "60"}, 0},
		{"§5.1 negative: ignored", []string{"-7200"}, 0},
		{"RFC 9110 §5.6.1 an empty line adds no member", []string{"", "42"}, 42},
		{"§1.2.2 capped", []string{"2147483648"}, 1 << 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h fasthttp.ResponseHeader
			for _, l := range tt.lines {
				h.Add("Age", l)
			}
			if got := ResponseAge(&h); got != tt.want {
				t.Errorf("ResponseAge(%q) = %d, want %d", tt.lines, got, tt.want)
			}
		})
	}
}

func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"0", "60", "-1", "1.5", "7200, 0", "99999999999999999999999", ",,", " 5 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := parseAge([]byte(s))
		if n < 0 || n > deltaMax {
			t.Fatalf("parseAge(%q) = %d out of [0, 2^31]", s, n)
		}
		if !ok && n != 0 {
			t.Fatalf("parseAge(%q) = %d with ok=false", s, n)
		}
		// Only the first member counts (§5.1).
		if first := firstMember([]byte(s)); len(first) > 0 {
			if m, ok2 := parseAge(first); m != n || ok2 != ok {
				t.Fatalf("parseAge(%q) = %d, %v; its first member %q gives %d, %v", s, n, ok, first, m, ok2)
			}
		}
		// A single all-digit member round-trips below the cap.
		if ok && n < deltaMax && !ageHasComma(s) {
			if m, ok2 := parseAge([]byte(itoa(n))); !ok2 || m != n {
				t.Fatalf("parseAge(%q) = %d does not round-trip", s, n)
			}
		}
	})
}

func ageHasComma(s string) bool {
	for i := range len(s) {
		if s[i] == ',' {
			return true
		}
	}
	return false
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
