package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"strata/configs"
)

// params are an object request's query parameters (README of this
// command: the table in main.go's doc). Integers are -1 when absent.
type params struct {
	version                    int64
	maxAge, sMaxAge, swr, sie  int64
	expires                    int64 // seconds from now; may be negative
	hasExpires                 bool
	noStore, noCache, private  bool
	public, mustRevalidate     bool
	proxyRevalidate, immutable bool
	etag                       byte // 0, 's' (strong) or 'w' (weak)
	lm                         bool
	vary                       string
	cookie, chunked            bool
	status                     int
	delay                      time.Duration
	rate                       int64 // bytes per second; 0: full speed
	truncate                   int64 // -1: none
	tags, ctype                string
	extra                      [][2]string // hdr=Name:Value
	hints                      []string    // hint=<Link value>: sent in a 103 before the delay
}

// Bounds on what a query may ask for, so a typo cannot wedge a test run.
const (
	maxDelay   = 5 * time.Minute
	maxObject  = 1 << 40 // 1 TiB
	maxHeaders = 16
)

var errParam = errors.New("origin: bad query parameter")

// parseParams parses the query args (name, value pairs in order).
func parseParams(args [][2]string) (params, error) {
	p := params{maxAge: -1, sMaxAge: -1, swr: -1, sie: -1, truncate: -1, status: 200}
	for _, kv := range args {
		if err := p.set(kv[0], kv[1]); err != nil {
			return p, fmt.Errorf("%w: %s=%q: %v", errParam, kv[0], kv[1], err)
		}
	}
	return p, nil
}

func (p *params) set(k, v string) error {
	var err error
	switch k {
	case "version":
		p.version, err = nonNeg(v)
	case "max-age":
		p.maxAge, err = nonNeg(v)
	case "s-maxage":
		p.sMaxAge, err = nonNeg(v)
	case "swr":
		p.swr, err = nonNeg(v)
	case "sie":
		p.sie, err = nonNeg(v)
	case "expires":
		p.expires, err = strconv.ParseInt(v, 10, 64)
		p.hasExpires = true
	case "no-store", "no-cache", "private", "public", "must-revalidate", "proxy-revalidate", "immutable",
		"lm", "cookie", "chunked":
		*p.flag(k) = v != "0" && v != "false"
	case "etag":
		err = p.setETag(v)
	case "vary":
		p.vary = v
	case "status":
		var s int64
		if s, err = strconv.ParseInt(v, 10, 0); err == nil && (s < 200 || s > 599) {
			err = errors.New("want 200..599")
		}
		p.status = int(s)
	case "delay":
		if p.delay, err = time.ParseDuration(v); err == nil && (p.delay < 0 || p.delay > maxDelay) {
			err = fmt.Errorf("want 0..%v", maxDelay)
		}
	case "rate":
		if p.rate, err = configs.ParseRate(v); err == nil && p.rate == 0 {
			err = errors.New("want a positive rate")
		}
	case "truncate":
		p.truncate, err = nonNeg(v)
	case "tag":
		p.tags = strings.ReplaceAll(v, ",", " ")
	case "ctype":
		p.ctype = v
	case "hdr":
		err = p.addHeader(v)
	case "hint":
		err = p.addHint(v)
	default:
		// Unknown parameters are ignored: tests use them to make distinct URLs.
	}
	return err
}

func (p *params) flag(k string) *bool {
	return map[string]*bool{"no-store": &p.noStore, "no-cache": &p.noCache, "private": &p.private,
		"public": &p.public, "must-revalidate": &p.mustRevalidate, "proxy-revalidate": &p.proxyRevalidate,
		"immutable": &p.immutable, "lm": &p.lm, "cookie": &p.cookie, "chunked": &p.chunked}[k]
}

func (p *params) setETag(v string) error {
	switch v {
	case "1", "s", "strong":
		p.etag = 's'
	case "w", "weak":
		p.etag = 'w'
	case "0":
		p.etag = 0
	default:
		return errors.New("want 1 (strong) or w (weak)")
	}
	return nil
}

func (p *params) addHeader(v string) error {
	name, val, ok := strings.Cut(v, ":")
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(val, "\r\n") {
		return errors.New("want Name:Value")
	}
	if len(p.extra) >= maxHeaders {
		return fmt.Errorf("at most %d", maxHeaders)
	}
	p.extra = append(p.extra, [2]string{name, strings.TrimSpace(val)})
	return nil
}

func (p *params) addHint(v string) error {
	if v == "" || strings.ContainsAny(v, "\r\n") {
		return errors.New("want a Link field value")
	}
	if len(p.hints) >= maxHeaders {
		return fmt.Errorf("at most %d", maxHeaders)
	}
	p.hints = append(p.hints, v)
	return nil
}

func nonNeg(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err == nil && n < 0 {
		err = errors.New("must not be negative")
	}
	return n, err
}

// cacheControl renders the Cache-Control value, "" when nothing was asked.
func (p *params) cacheControl() string {
	var d []string
	add := func(on bool, s string) {
		if on {
			d = append(d, s)
		}
	}
	add(p.public, "public")
	add(p.private, "private")
	add(p.noStore, "no-store")
	add(p.noCache, "no-cache")
	if p.maxAge >= 0 {
		d = append(d, "max-age="+strconv.FormatInt(p.maxAge, 10))
	}
	if p.sMaxAge >= 0 {
		d = append(d, "s-maxage="+strconv.FormatInt(p.sMaxAge, 10))
	}
	add(p.mustRevalidate, "must-revalidate")
	add(p.proxyRevalidate, "proxy-revalidate")
	add(p.immutable, "immutable")
	if p.swr >= 0 {
		d = append(d, "stale-while-revalidate="+strconv.FormatInt(p.swr, 10))
	}
	if p.sie >= 0 {
		d = append(d, "stale-if-error="+strconv.FormatInt(p.sie, 10))
	}
	return strings.Join(d, ", ")
}

// parseSize parses the size segment of /obj/<size>.
func parseSize(s string) (int64, error) {
	n, err := configs.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n > maxObject {
		return 0, fmt.Errorf("origin: object size %d over %d", n, int64(maxObject))
	}
	return n, nil
}
