package e2e

import "testing"

// TestCurlParseHeaders: the last header block of a -D dump wins (100
// Continue, redirects), and repeated fields keep every value.
func TestCurlParseHeaders(t *testing.T) {
	var r curlResult
	r.parseHeaders("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1/2\r\n" +
		"X-Note: mentions HTTP/1.0 inline\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n")
	if r.Status != 206 || r.Proto != "HTTP/1.1" || r.Header.Get("Content-Range") != "bytes 0-1/2" ||
		len(r.Header["Set-Cookie"]) != 2 {
		t.Fatalf("parsed %d %q %v", r.Status, r.Proto, r.Header)
	}
}

// TestListeningLine: the harness reads the lines the binaries print.
func TestListeningLine(t *testing.T) {
	for line, want := range map[string]listener{
		"origin listening on http://127.0.0.1:8081":                    {"origin", "http", "127.0.0.1:8081"},
		"2026/01/01 10:00:00 admin listening on http://127.0.0.1:9090": {"admin", "http", "127.0.0.1:9090"},
		"strata listening on https://[::1]:8443":                       {"strata", "https", "[::1]:8443"},
	} {
		m := listeningRE.FindStringSubmatch(line)
		if m == nil || (listener{m[1], m[2], m[3]}) != want {
			t.Errorf("%q: %v, want %v", line, m, want)
		}
	}
}
