package main

import (
	_ "embed"
	"net/http"
)

// consolePath is where the console is served; GET / redirects there.
const consolePath = "/_emulator/"

// consoleHTML is the console: one self-contained page (no build step, nothing
// fetched from elsewhere) that acts as the demo host through the public
// routes with the bearer of POST /_emulator/demo/session, and reads and
// drives the stand-ins, the clock and the tasks through the control API.
//
//go:embed console.html
var consoleHTML []byte

// consolePage is GET /_emulator/.
func consolePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(consoleHTML)
}
