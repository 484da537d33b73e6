// Package httpx is the HTTP edge every function shares: JSON errors from
// contract errors, the streaming body cap, token buckets, the client IP, bearer
// authentication with bounded session-lookup admission, /health and /ready,
// panic recovery and the shutdown drain. Function packages get all of it from
// [Edge.Wrap] and never write a status themselves.
package httpx
