package proxy

import (
	"math"
	"time"

	"github.com/valyala/fasthttp"
)

// ParseAge parses an Age field value (RFC 9111 §5.1): delta-seconds, a
// value over 2^31 becoming 2^31 (§1.2.2). It reports false for an invalid
// value (empty, negative, fractional, trailing junk): the caller then
// ignores the field, as the RFC gives no other rule and a negative or
// garbled Age carries no information.
//
// Age is a singleton field, but senders and intermediaries do produce lists
// ("7200, 0") and repeated lines; ParseAge accepts a comma-separated list
// whose members are all valid and returns the largest, the reading that
// makes the response older and so never serves it fresher than it may be.
func ParseAge(v []byte) (int64, bool) {
	var best int64
	seen := false
	for len(v) > 0 {
		var member []byte
		member, v = ageNextMember(v)
		if len(member) == 0 {
			continue
		}
		n, ok := ccParseDelta(member)
		if !ok {
			return 0, false
		}
		best = max(best, n)
		seen = true
	}
	return best, seen
}

// ageNextMember splits off the first comma-separated member of v, trimmed.
func ageNextMember(v []byte) (member, rest []byte) {
	i := 0
	for i < len(v) && v[i] != ',' {
		i++
	}
	member = v[:i]
	for len(member) > 0 && (member[0] == ' ' || member[0] == '\t') {
		member = member[1:]
	}
	member = ccTrimRight(member)
	if i < len(v) {
		i++
	}
	return member, v[i:]
}

// ResponseAge reads every Age line of h as one list (see ParseAge) and
// returns the age in seconds, 0 when absent or invalid.
func ResponseAge(h *fasthttp.ResponseHeader) int64 {
	var best int64
	for _, line := range h.PeekAll(fasthttp.HeaderAge) {
		n, ok := ParseAge(line)
		if !ok {
			return 0
		}
		best = max(best, n)
	}
	return best
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
// ageHeader is the Age value in seconds (ParseAge; 0 when absent), date the
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
	corrected := durAdd(ageSeconds(ageHeader), delay)
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

// ageSeconds converts delta-seconds to a Duration, clamped to [0, 2^31] s
// so no later sum can overflow.
func ageSeconds(s int64) time.Duration {
	return time.Duration(min(max(s, 0), ccDeltaMax)) * time.Second
}
