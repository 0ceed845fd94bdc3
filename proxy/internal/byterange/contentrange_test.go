package byterange

import "testing"

func TestContentRange(t *testing.T) {
	if got := string(AppendContentRange(nil, Range{0, 99}, 1000)); got != "bytes 0-99/1000" {
		t.Errorf("AppendContentRange = %q", got)
	}
	if got := string(AppendUnsatisfied(nil, 1000)); got != "bytes */1000" {
		t.Errorf("AppendUnsatisfied = %q", got)
	}
	if n := (Range{5, 9}).Len(); n != 5 {
		t.Errorf("Len = %d", n)
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in      string
		a, b, n int64
		ok      bool
	}{
		{"bytes 0-99/1000", 0, 99, 1000, true},
		{" bytes 5-5/6 ", 5, 5, 6, true},
		{"BYTES 0-0/1", 0, 0, 1, true},
		{"bytes 0-99/*", 0, 0, 0, false},
		{"bytes */1000", 0, 0, 0, false},
		{"bytes 9-1/1000", 0, 0, 0, false},
		{"bytes 0-1000/1000", 0, 0, 0, false},
		{"bytes=0-1/2", 0, 0, 0, false},
		{"bytes 0-1", 0, 0, 0, false},
		{"bytes -1/2", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"bytes 0-1/99999999999999999999999", 0, 0, 0, false},
	} {
		a, b, n, ok := ParseContentRange([]byte(tc.in))
		if ok != tc.ok || (ok && (a != tc.a || b != tc.b || n != tc.n)) {
			t.Errorf("%q: got %d %d %d %v", tc.in, a, b, n, ok)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/1000", "bytes */5", "bytes 1-0/2", "bytes 0-1/*"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, l, n, ok := ParseContentRange(b)
		if ok && !(0 <= a && a <= l && l < n) {
			t.Fatalf("%q: accepted %d-%d/%d", b, a, l, n)
		}
		if ok && string(b) != "" {
			again := AppendContentRange(nil, Range{a, l}, n)
			a2, l2, n2, ok2 := ParseContentRange(again)
			if !ok2 || a2 != a || l2 != l || n2 != n {
				t.Fatalf("%q: round trip %q", b, again)
			}
		}
	})
}
