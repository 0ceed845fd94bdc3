package httpcache

import (
	"time"

	"github.com/valyala/fasthttp"
)

// ParseDate parses an HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, and the
// obsolete RFC 850 and asctime forms) with fasthttp.ParseHTTPDate. Values
// whose length fits none of the three forms are refused before the parser
// runs: fasthttp parses IMF-fixdate without allocating but falls back to
// net/http (which allocates its error) for everything else, and a hostile
// peer should not be able to make every request allocate.
func ParseDate(b []byte) (time.Time, bool) {
	b = trimSpace(b)
	// IMF-fixdate is 29 bytes, asctime 24, RFC 850 30 to 33.
	if len(b) != 24 && (len(b) < 29 || len(b) > 33) {
		return time.Time{}, false
	}
	t, err := fasthttp.ParseHTTPDate(b)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}
