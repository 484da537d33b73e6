package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"onorca.dev/push/scripts/emulator/emulatortest"
)

// closeWait bounds how long a test waits for the emulator to close a
// connection it should close after a second: a process boundary, so a
// real-time wait, and far below the 10 s header timeout that was the only
// one the server had.
const closeWait = 5 * time.Second

// TestServerTimeouts: with its timeouts set to a second, the emulator
// closes a keep-alive connection left idle, one that never sends a request,
// one that trickles its headers and one that trickles its body, each within
// seconds, and answers a legitimate request meanwhile; a declared body over
// 16 KiB with nothing sent is 413 at once, not a wait for the body (issue 26
// §3: idle and trickled connections were held forever).
func TestServerTimeouts(t *testing.T) {
	p := startEmulatorWith(t, emulatortest.FreePort("-read-timeout", "1s", "-idle-timeout", "1s", "-write-timeout", "10s"))
	addr := strings.TrimPrefix(p.origin, "http://")
	dial := func(t *testing.T, send string) (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}

	idle, idleR := dial(t, "GET /health HTTP/1.1\r\nHost: emulator\r\n\r\n")
	if resp, err := http.ReadResponse(idleR, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health on the idle connection = %v, %v", resp, err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	silent, silentR := dial(t, "")
	headers, headersR := dial(t, "POST /v1/host/challenge HTTP/1.1\r\nHost: emulator\r\n")
	body, bodyR := dial(t, "POST /v1/host/challenge HTTP/1.1\r\nHost: emulator\r\nContent-Length: 1000\r\n\r\n{")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range []net.Conn{headers, body} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := io.WriteString(c, "x"); err != nil {
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()

	resp, err := http.Get(p.origin + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health while connections are held = %v, %v", resp, err)
	}
	resp.Body.Close()

	for _, tt := range []struct {
		name string
		c    net.Conn
		r    *bufio.Reader
	}{{"idle", idle, idleR}, {"silent", silent, silentR}, {"trickled headers", headers, headersR}, {"trickled body", body, bodyR}} {
		tt.c.SetReadDeadline(time.Now().Add(closeWait))
		_, err := io.Copy(io.Discard, tt.r)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s connection still open after %v", tt.name, closeWait)
		}
	}

	large, largeR := dial(t, "POST /v1/host/challenge HTTP/1.1\r\nHost: emulator\r\nContent-Length: 1073741824\r\n\r\n")
	large.SetReadDeadline(time.Now().Add(closeWait))
	resp, err = http.ReadResponse(largeR, nil)
	if err != nil {
		t.Fatalf("no answer to a declared gigabyte: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || strings.TrimSpace(string(b)) != `{"error":"request_too_large"}` {
		t.Errorf("declared gigabyte = %d %s, want 413 request_too_large", resp.StatusCode, b)
	}
}
