package httpcache

import (
	"math"
	"time"

	"github.com/valyala/fasthttp"
)

// parseAge parses an Age field value (RFC 9111 §5.1): delta-seconds, a
// value over 2^31 becoming 2^31 (§1.2.2).
//
// Age is a singleton field, but senders and intermediaries do produce lists
// ("7200, 0") and repeated lines. §5.1: "a cache encountering a message
// with a list-based Age field value SHOULD use the first member of the
// field value, discarding subsequent ones", and "if the field value (after
// discarding additional members ...) is invalid (e.g., it contains
// something other than a non-negative integer), a cache SHOULD ignore the
// field". So parseAge reads the first non-empty member (RFC 9110 §5.6.1:
// empty list elements do not count) and reports false when that member is
// not delta-seconds: empty, negative, fractional, with parameters
// ("7200;foo=bar": Age is not a structured field) or anything else. The
// caller then ignores the field: age_value is 0 (§4.2.3). Later members are
// not looked at, valid or not.
//
// The conformance suite we run (http-cache-tests 0.4.5) expects the
// opposite for several of these: an invalid Age, "0, 0", "3600, 3600" or a
// second Age line would make the response stale. RFC 9111 says otherwise
// (ignore the invalid field; use the first member), and the suite's later
// versions agree with the RFC; we follow the RFC, so age-parse-nonnumeric,
// -negative, -float, -parameter, -numeric-parameter, -dup-0, -dup-0-twoline,
// -dup-old and -prefix-twoline fail there on purpose.
func parseAge(v []byte) (int64, bool) {
	if m := firstMember(v); len(m) > 0 {
		return parseDelta(m)
	}
	return 0, false
}

// ResponseAge reads the Age field of h and returns the age in seconds, 0
// when absent or invalid. Several Age lines are one list (RFC 9110 §5.3),
// so the first member is on the first line that holds one (see parseAge).
func ResponseAge(h *fasthttp.ResponseHeader) int64 {
	return responseAge(h.PeekAll(fasthttp.HeaderAge))
}

// responseAge is ResponseAge on the Age lines.
func responseAge(lines [][]byte) int64 {
	for _, line := range lines {
		if m := firstMember(line); len(m) > 0 {
			n, ok := parseDelta(m)
			if !ok {
				return 0
			}
			return n
		}
	}
	return 0
}

// CurrentAge is the age of a stored response now (RFC 9111 §4.2.3):
//
//	apparent_age          = max(0, response_time - date_value)
//	response_delay        = response_time - request_time
//	corrected_age_value   = age_value + response_delay
//	corrected_initial_age = max(apparent_age, corrected_age_value)
//	resident_time         = now - response_time
//	current_age           = corrected_initial_age + resident_time
//
// ageHeader is the Age value in seconds (parseAge; 0 when absent), date the
// response's Date (zero time when absent: the apparent age is then 0),
// requestTime when the request that fetched it was sent and responseTime
// when the response arrived. Two guards for clocks that step backwards,
// where the formula would go negative: response_delay and resident_time
// count as at least 0, so the result is never negative and never smaller
// than the age the response arrived with.
func CurrentAge(ageHeader int64, date, requestTime, responseTime, now time.Time) time.Duration {
	var apparent time.Duration
	if !date.IsZero() {
		apparent = max(0, responseTime.Sub(date))
	}
	delay := max(0, responseTime.Sub(requestTime))
	corrected := durAdd(Seconds(ageHeader), delay)
	initial := max(apparent, corrected)
	resident := max(0, now.Sub(responseTime))
	return durAdd(initial, resident)
}

// durAdd adds two non-negative durations, saturating instead of wrapping
// (time.Time.Sub saturates too, so its results can be near the maximum).
func durAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Seconds converts delta-seconds to a Duration, clamped to [0, 2^31] s
// so no later sum can overflow.
func Seconds(s int64) time.Duration {
	return time.Duration(min(max(s, 0), deltaMax)) * time.Second
}
