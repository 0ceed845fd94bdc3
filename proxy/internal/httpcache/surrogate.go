package httpcache

// Surrogate-Control (W3C Edge Architecture Specification 1.0, 2001) is a
// response field an origin addresses to surrogates, the caches it
// operates in front of itself (a CDN, an origin shield, strata), as
// opposed to Cache-Control, which every cache and the browser read.
//
//	Surrogate-Control = 1#( directive [ ";" device-token ] )
//	Surrogate-Capability (request) = 1#( device-token "=" quoted-capabilities )
//
// A surrogate announces itself on the requests it forwards with
// Surrogate-Capability: <token>="Surrogate/1.0"; a directive followed by
// ";token" is meant for the surrogate with that token only, one without a
// token for every surrogate. The surrogate that acts on the field removes
// it before forwarding the response.
//
// The rules strata applies (documented decisions where the note is silent
// or loose):
//   - Directives targeted at another token are ignored. A directive
//     targeted at strata's token beats the same directive without a token.
//   - max-age=N[+M]: the freshness lifetime for strata is N seconds; it
//     replaces everything Cache-Control and Expires say about storing and
//     freshness for strata: max-age, s-maxage, Expires, the heuristic,
//     and no-store, no-cache and private. The origin sends both fields on
//     purpose, Surrogate-Control for its own surrogates and Cache-Control
//     for everyone downstream, so the one addressed to strata wins. The
//     "+M" extension is parsed and ignored (serving stale needs an explicit
//     stale-while-revalidate / stale-if-error or the configured grace).
//     Two max-age values of the same rank that disagree count as 0, and an
//     invalid value as 0 (stale), as for Cache-Control (RFC 9111 §4.2.1).
//   - no-store (and no-store-remote, which the note addresses to surrogates
//     far from the client; strata cannot know where it stands, so it reads
//     it the safe way): never stored, whatever else the response says.
//   - Nothing lifts the rules that protect a request rather than describe
//     the response: the request's no-store, Authorization (RFC 9111 §3.5),
//     Set-Cookie (StoreSetCookie), Vary: *, must-understand, the status.
//     Cache-Control's must-revalidate, proxy-revalidate and stale-* windows
//     still apply to the stored response.
//   - Every other directive (content="ESI/1.0", extensions) is ignored.
//   - With PolicyOptions.IgnoreSurrogateControl, strata neither reads nor
//     removes the field nor announces itself: it is a plain HTTP cache.
//   - The field is not stored: a 304 that refreshes a stored response must
//     carry it again to keep its effect (origins send the same caching
//     fields on a 304 as on the 200, RFC 9110 §15.4.5).
type SurrogateControl struct {
	// MaxAge is the applicable max-age in seconds, -1 when none.
	MaxAge int64
	// NoStore: an applicable no-store or no-store-remote.
	NoStore bool
	// maxAgeRank: 0 none yet, 1 from an untargeted directive, 2 targeted.
	maxAgeRank uint8
}

// reset sets sc to "no directives".
func (sc *SurrogateControl) reset() { *sc = SurrogateControl{MaxAge: -1} }

// add merges the directives of one Surrogate-Control field line that apply
// to the surrogate named token (case-insensitive). It never fails: junk is
// skipped. It does not allocate.
// REQUIRES: sc was reset before the first add.
func (sc *SurrogateControl) add(line []byte, token string) {
	for len(line) > 0 {
		var name, arg []byte
		var hasArg bool
		name, arg, hasArg, line = nextDirective(line)
		var target []byte
		if hasArg {
			arg, target = surrogateTarget(arg)
		} else {
			name, target = surrogateTarget(name)
		}
		rank := uint8(1)
		if target != nil {
			if !equalFold(target, token) {
				continue
			}
			rank = 2
		}
		sc.apply(name, arg, hasArg, rank)
	}
}

// surrogateTarget splits "value;token" into the value and the token (nil
// when there is no ';'), both trimmed.
func surrogateTarget(v []byte) (value, target []byte) {
	for i, c := range v {
		if c == ';' {
			return trimRight(v[:i]), trimSpace(v[i+1:])
		}
	}
	return v, nil
}

func (sc *SurrogateControl) apply(name, arg []byte, hasArg bool, rank uint8) {
	switch {
	case equalLower(name, "no-store"), equalLower(name, "no-store-remote"):
		sc.NoStore = true
	case equalLower(name, "max-age"):
		n, ok := surrogateMaxAge(arg, hasArg)
		switch {
		case rank > sc.maxAgeRank:
			sc.MaxAge, sc.maxAgeRank = n, rank
		case rank == sc.maxAgeRank && (!ok || n != sc.MaxAge):
			sc.MaxAge = 0 // conflicting values: the stale reading
		}
	}
}

// surrogateMaxAge parses "N" or "N+M" (the extension M is ignored);
// invalid or missing becomes 0 with ok false.
func surrogateMaxAge(arg []byte, hasArg bool) (int64, bool) {
	for i, c := range arg {
		if c == '+' {
			arg = arg[:i]
			break
		}
	}
	n, ok := parseDelta(arg)
	if !hasArg || !ok {
		return 0, false
	}
	return n, true
}

// readSurrogateControl fills sc from the Surrogate-Control lines
// addressed to token.
func readSurrogateControl(sc *SurrogateControl, lines [][]byte, token string) {
	sc.reset()
	for _, line := range lines {
		sc.add(line, token)
	}
}

// applySurrogate lets an applicable Surrogate-Control max-age replace the
// freshness StoreDecision computed from Cache-Control and Expires.
func applySurrogate(si *StoreInfo) {
	if si.Surrogate.MaxAge < 0 {
		return
	}
	si.Lifetime = Seconds(si.Surrogate.MaxAge)
	si.Heuristic = false
	si.NoCache = false
}

// surrogateOverrides reports whether an applicable Surrogate-Control
// max-age takes Cache-Control's no-store, no-cache and private out of
// strata's decision.
func (si *StoreInfo) surrogateOverrides() bool { return si.Surrogate.MaxAge >= 0 }
