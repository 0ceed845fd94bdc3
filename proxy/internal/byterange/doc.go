// Package byterange parses and frames byte ranges (RFC 9110 §14): the
// Range request field (Parse: sorted, coalesced, bounded by MaxSpecs), the
// Content-Range field of a 206 or 416 (AppendContentRange,
// AppendUnsatisfied, ParseContentRange) and the multipart/byteranges body
// of a response with several ranges (AppendPartHeader, AppendPartsEnd and
// MultipartLength, its exact length for Content-Length).
//
// Errors tell the caller what to answer: ErrInvalid and ErrTooMany, the
// whole representation with 200; ErrUnsatisfiable, 416. Nothing allocates
// when dst has room. The package imports only the standard library.
package byterange
