package httpcache

// Header field names, prebuilt as bytes so that hot paths do not convert
// strings: every name strata reads or writes as bytes, here and in proxy,
// is defined here once. Read-only: never write into them or append to
// them. (Lookups that take a string use fasthttp's Header* constants.)
var (
	HeaderAge                 = []byte("Age")
	HeaderCacheStatus         = []byte("Cache-Status")
	HeaderCacheTag            = []byte("Cache-Tag")
	HeaderConnection          = []byte("Connection")
	HeaderContentLength       = []byte("Content-Length")
	HeaderContentRange        = []byte("Content-Range")
	HeaderContentType         = []byte("Content-Type")
	HeaderDate                = []byte("Date")
	HeaderIfMatch             = []byte("If-Match")
	HeaderIfModifiedSince     = []byte("If-Modified-Since")
	HeaderIfNoneMatch         = []byte("If-None-Match")
	HeaderIfRange             = []byte("If-Range")
	HeaderIfUnmodifiedSince   = []byte("If-Unmodified-Since")
	HeaderRange               = []byte("Range")
	HeaderSurrogateCapability = []byte("Surrogate-Capability")
	HeaderSurrogateControl    = []byte(surrogateControl)
	HeaderSurrogateKey        = []byte("Surrogate-Key")
	HeaderTransferEncoding    = []byte("Transfer-Encoding")
	HeaderVia                 = []byte("Via")
	HeaderXForwardedFor       = []byte("X-Forwarded-For")
	HeaderXForwardedHost      = []byte("X-Forwarded-Host")
	HeaderXForwardedProto     = []byte("X-Forwarded-Proto")
)

// Names only the field rules here use.
var (
	headerAltSvc    = []byte("Alt-Svc")
	headerKeepAlive = []byte("Keep-Alive")
	headerTE        = []byte("TE")
	headerTrailer   = []byte("Trailer")
	headerUpgrade   = []byte("Upgrade")
	// proxyPrefix starts the names of the Proxy-* fields (HopByHop).
	proxyPrefix = []byte("Proxy-")
)

// surrogateControl names Surrogate-Control for fasthttp's lookups by string.
const surrogateControl = "Surrogate-Control"
