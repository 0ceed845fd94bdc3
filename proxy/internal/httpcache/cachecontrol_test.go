package httpcache

import (
	"strings"
	"testing"
)

// ccWant builds the expected CacheControl: absent numbers are -1.
func ccWant(f func(cc *CacheControl)) CacheControl {
	var cc CacheControl
	cc.reset()
	if f != nil {
		f(&cc)
	}
	return cc
}

func TestParseCacheControl(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want CacheControl
	}{
		{"empty", "", ccWant(nil)},
		{"§5.2.2.1 max-age", "max-age=60", ccWant(func(c *CacheControl) { c.MaxAge = 60 })},
		{"§5.2 names are case-insensitive", "Max-Age=60, No-StOrE, PUBLIC", ccWant(func(c *CacheControl) {
			c.MaxAge, c.NoStore, c.Public = 60, true, true
		})},
		{"§5.2.2.10 s-maxage with others", "public, s-maxage=300, max-age=10", ccWant(func(c *CacheControl) {
			c.Public, c.SMaxAge, c.MaxAge = true, 300, 10
		})},
		{"§1.2.2 leading zeros", "max-age=003600", ccWant(func(c *CacheControl) { c.MaxAge = 3600 })},
		{"§1.2.2 overflow becomes 2^31", "max-age=99999999999999999999999", ccWant(func(c *CacheControl) { c.MaxAge = 1 << 31 })},
		{"§4.2.1 negative max-age is stale", "max-age=-1", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 fractional max-age is stale", "max-age=3600.5", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 trailing alpha is stale", "max-age=3600a", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 single quotes are stale", "max-age='3600'", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 empty value is stale", "max-age=", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 missing value is stale", "max-age", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§5.2 quoted delta accepted", `max-age="3600"`, ccWant(func(c *CacheControl) { c.MaxAge = 3600 })},
		{"§5.2 space before = is not max-age", "max-age =3600", ccWant(nil)},
		{"§5.2 space after = is invalid", "max-age= 3600", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 conflicting duplicates are stale", "max-age=1800, max-age=1", ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 equal duplicates", "max-age=5, max-age=5", ccWant(func(c *CacheControl) { c.MaxAge = 5 })},
		{"§5.2 quoted string hides directives", `ext="max-age=3600, no-store", max-age=1`, ccWant(func(c *CacheControl) { c.MaxAge = 1 })},
		{"§5.2 quoted string after", `max-age=1, ext="max-age=3600"`, ccWant(func(c *CacheControl) { c.MaxAge = 1 })},
		{"§5.2 escaped quote inside", `ext="a\"b, no-store", private`, ccWant(func(c *CacheControl) { c.Private = true })},
		{"§5.2 unterminated quote swallows the rest", `ext="a, no-store`, ccWant(nil)},
		{"§5.2.2.4 qualified no-cache read as unqualified", `no-cache="Set-Cookie, a", max-age=5`, ccWant(func(c *CacheControl) {
			c.NoCache, c.MaxAge = true, 5
		})},
		{"§5.2.2.7 qualified private read as unqualified", `private="x"`, ccWant(func(c *CacheControl) { c.Private = true })},
		{"§5.2.2 all booleans", "no-store,no-cache,private,public,must-revalidate,proxy-revalidate,must-understand,no-transform,only-if-cached,immutable",
			ccWant(func(c *CacheControl) {
				c.NoStore, c.NoCache, c.Private, c.Public, c.MustRevalidate = true, true, true, true, true
				c.ProxyRevalidate, c.MustUnderstand, c.NoTransform, c.OnlyIfCached, c.Immutable = true, true, true, true, true
			})},
		{"§5.2.1.2 max-stale without value", "max-stale", ccWant(func(c *CacheControl) { c.MaxStaleAny = true })},
		{"§5.2.1.2 max-stale with value", "max-stale=30", ccWant(func(c *CacheControl) { c.MaxStale = 30 })},
		{"§5.2.1.3 min-fresh", "min-fresh=20", ccWant(func(c *CacheControl) { c.MinFresh = 20 })},
		{"§5.2.1.3 invalid min-fresh ignored", "min-fresh=x", ccWant(nil)},
		{"§5.2.1.3 duplicate min-fresh takes the larger", "min-fresh=20, min-fresh=50, min-fresh=30", ccWant(func(c *CacheControl) { c.MinFresh = 50 })},
		{"RFC 5861 windows", "stale-while-revalidate=30, stale-if-error=600", ccWant(func(c *CacheControl) {
			c.StaleWhileRevalidate, c.StaleIfError = 30, 600
		})},
		{"RFC 5861 invalid window is none", "stale-while-revalidate=abc", ccWant(func(c *CacheControl) { c.StaleWhileRevalidate = 0 })},
		{"§5.2.3 unknown extensions ignored", "foo, bar=baz, community=\"UCI\", max-age=7", ccWant(func(c *CacheControl) { c.MaxAge = 7 })},
		{"§5.2 empty list elements and whitespace", " , ,\tno-store ,, max-age=2 ,", ccWant(func(c *CacheControl) {
			c.NoStore, c.MaxAge = true, 2
		})},
		{"§5.2 boolean with argument still set", "no-store=1", ccWant(func(c *CacheControl) { c.NoStore = true })},
		{"§5.2 similar names are not directives", "no-stores, max-ages=5, xno-cache", ccWant(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cc CacheControl
			cc.MaxAge = 12345 // parseCacheControl must reset
			parseCacheControl(&cc, []byte(tt.in))
			if cc != tt.want {
				t.Errorf("parseCacheControl(%q)\n got %+v\nwant %+v", tt.in, cc, tt.want)
			}
		})
	}
}

// §4.2.1 / RFC 9110 §5.3: several field lines are one list; duplicates
// across lines follow the same rules as within one.
func TestCacheControlAddLines(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  CacheControl
	}{
		{"§5.3 lines combine", []string{"public", "max-age=60"}, ccWant(func(c *CacheControl) { c.Public, c.MaxAge = true, 60 })},
		{"§4.2.1 conflict across lines is stale", []string{"max-age=1800", "max-age=1"}, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"§4.2.1 conflict stays stale on a third line", []string{"max-age=1", "max-age=2", "max-age=1"}, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cc CacheControl
			cc.reset()
			for _, l := range tt.lines {
				cc.add([]byte(l))
			}
			if cc != tt.want {
				t.Errorf("got %+v\nwant %+v", cc, tt.want)
			}
		})
	}
}

func TestParseCacheControlAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	v := []byte(`public, max-age=3600, s-maxage=60, ext="a, b", stale-while-revalidate=30, no-transform`)
	var cc CacheControl
	if n := testing.AllocsPerRun(100, func() { parseCacheControl(&cc, v) }); n != 0 {
		t.Errorf("parseCacheControl allocates %v times per run, want 0", n)
	}
}

func FuzzParseCacheControl(f *testing.F) {
	for _, s := range []string{"", "max-age=60", `ext="a,b", max-age=1`, "max-stale", "max-age=99999999999999999999",
		`no-cache="a`, "max-age=\"5\", min-fresh=3, stale-if-error=x", ",,=,=\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var cc CacheControl
		parseCacheControl(&cc, []byte(s))
		for _, v := range []int64{cc.MaxAge, cc.SMaxAge, cc.MaxStale, cc.MinFresh, cc.StaleWhileRevalidate, cc.StaleIfError} {
			if v < -1 || v > deltaMax {
				t.Fatalf("%q: value %d out of [-1, 2^31]: %+v", s, v, cc)
			}
		}
		// A directive list repeated after itself means the same: repeats of
		// equal values are harmless and conflicts stay conflicts. (Quotes
		// are left out: an unterminated one swallows the copy.)
		if !strings.Contains(s, `"`) {
			var twice CacheControl
			parseCacheControl(&twice, []byte(s+","+s))
			if twice != cc {
				t.Fatalf("%q: doubled list differs:\n%+v\n%+v", s, cc, twice)
			}
		}
	})
}
