package storetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"onorca.dev/push/shared/store"
)

// RoundTrips counts the round trips clients make to PostgreSQL through a
// proxy: every simple Query message and every Sync message of the extended
// protocol is one wait for the server's ReadyForQuery, and every Flush one
// wait for the answers before it. pgx sends each statement with arguments
// as Bind/Execute/Sync (plus a Parse/Describe/Sync the first time a
// connection sees it); the store's transactions end each round trip but
// their last with a Flush (and prepare with one), so the count is what the
// network sees, not an estimate; only the pool's liveness ping is left out
// (see pingQuery). It also records
// the statements the clients prepare (Statements).
type RoundTrips struct {
	n atomic.Int64
	// cut, when not zero, is the count at which the proxy drops the
	// connection carrying that round trip; delivered says whether the
	// server gets the round trip first (only its answer is lost).
	cut       atomic.Int64
	delivered atomic.Bool
	// down makes the proxy refuse connections; p closes the open ones.
	down atomic.Bool
	p    *proxy
	// sent and received are the bytes the proxy passed to the server and
	// back to the clients: the PostgreSQL protocol's, without TLS or TCP/IP.
	sent, received atomic.Int64
	// mu guards statements.
	mu sync.Mutex
	// statements holds the text of every statement a client prepared
	// (a Parse message), each once.
	statements map[string]bool
}

// Statements returns the text of every statement the clients prepared
// through the proxy so far, each once, in no particular order: what the
// gateway's code asked PostgreSQL to plan. pgx, and the store's pipeline,
// prepare every statement with arguments, once per connection.
func (r *RoundTrips) Statements() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.statements))
	for q := range r.statements {
		out = append(out, q)
	}
	return out
}

// parsed records the statement of a Parse message's body: the prepared
// statement's name and then its text, each ending in a zero byte.
func (r *RoundTrips) parsed(body string) {
	_, rest, ok := strings.Cut(body, "\x00")
	if !ok {
		return
	}
	text, _, ok := strings.Cut(rest, "\x00")
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.statements == nil {
		r.statements = make(map[string]bool)
	}
	r.statements[text] = true
}

// Bytes returns the bytes passed to the server (sent) and back to the
// clients (received) so far, every connection's, the startup and the
// liveness pings included.
func (r *RoundTrips) Bytes() (sent, received int64) { return r.sent.Load(), r.received.Load() }

// countingWriter adds what it writes to n.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countingWriter) Write(p []byte) (int, error) {
	k, err := cw.w.Write(p)
	cw.n.Add(int64(k))
	return k, err
}

// SetDown makes the database unreachable (true): every open connection
// through the proxy is dropped and every new one is closed before the server
// sees it, as a server that is restarting refuses them. SetDown(false)
// lets connections through again.
func (r *RoundTrips) SetDown(down bool) {
	r.down.Store(down)
	if down {
		r.p.closeConns()
	}
}

// Load returns the round trips counted so far.
func (r *RoundTrips) Load() int64 { return r.n.Load() }

// Cut makes the proxy drop the connection that carries the k-th round trip
// from now, once. When delivered is false the server sees none of that
// round trip's messages; when it is true the server gets them all and only
// the answer is lost. Use it with one client at a time.
func (r *RoundTrips) Cut(k int64, delivered bool) {
	r.delivered.Store(delivered)
	r.cut.Store(r.n.Load() + k)
}

// CountingPostgres creates a fresh schema as [PostgresOptions] does and
// returns options that reach it through a local proxy counting round trips.
// The proxy stops when t ends; t is skipped when PostgreSQL is.
func CountingPostgres(t testing.TB) (store.Options, *RoundTrips) {
	t.Helper()
	opts := Postgres(t).Options(t)
	u, err := url.Parse(opts.DatabaseURL)
	if err != nil {
		t.Fatalf("postgres url: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &RoundTrips{}
	p := &proxy{ln: ln, target: u.Host, rt: rt}
	rt.p = p
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	opts.DatabaseURL = u.String()
	return opts, rt
}

// proxy forwards connections to target, counting the client's messages.
type proxy struct {
	ln     net.Listener
	target string
	rt     *RoundTrips
	// beforeCount, when set, runs just before a round trip is counted: a
	// test stands in for a proxy goroutine descheduled there.
	beforeCount atomic.Pointer[func()]
	wg          sync.WaitGroup
	// mu guards conns.
	mu    sync.Mutex
	conns []net.Conn
}

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.rt.down.Load() {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		// mute is set once a round trip was cut after the server got it:
		// its answer, and anything after, is not passed on.
		mute := new(atomic.Bool)
		go func() {
			defer p.wg.Done()
			answer(countingWriter{c, &p.rt.received}, s, mute)
			c.Close()
			s.Close()
		}()
		go func() {
			defer p.wg.Done()
			if p.count(countingWriter{s, &p.rt.sent}, c, mute) {
				// The other direction closes both sides once the server
				// answered: the client must not see the connection drop
				// before the server carried out the round trip, or it could
				// look for the round trip's rows before they are there.
				return
			}
			s.Close()
			c.Close()
		}()
	}
}

// Request codes of the untyped messages a client may send before its
// startup message (PostgreSQL protocol, "Message Formats").
const (
	sslRequest    = 80877103
	gssEncRequest = 80877104
)

// count copies the frontend stream from c to s message by message. The
// startup message, and an SSL or GSS encryption request before it, have no
// type byte; every later message is a type byte and a length that counts
// itself. An encrypted session is not supported (the tests disable SSL).
// While a cut is armed, messages are held until the Sync or Query that ends
// their round trip, so that a cut round trip reaches the server whole or
// not at all; it returns to drop the connection. It reports whether the
// server side must stay open: after a round trip cut with delivered set, the
// server's answer shows that it processed it, and the other direction
// closes both sides once that answer comes (closing the server side at once
// could reset the connection before the server read the round trip; closing
// the client side at once would let the client look before the server
// committed).
func (p *proxy) count(s io.Writer, c io.Reader, mute *atomic.Bool) (answerPending bool) {
	var head [8]byte
	for {
		if _, err := io.ReadFull(c, head[:8]); err != nil {
			return false
		}
		code := binary.BigEndian.Uint32(head[4:8])
		if err := forward(s, c, head[:8], int(binary.BigEndian.Uint32(head[:4]))-8); err != nil {
			return false
		}
		if code != sslRequest && code != gssEncRequest {
			break
		}
	}
	var held bytes.Buffer
	for {
		if _, err := io.ReadFull(c, head[:5]); err != nil {
			return false
		}
		size := int(binary.BigEndian.Uint32(head[1:5])) - 4
		// A round trip's last message (a Sync, or a simple query) is
		// counted before the server can see it: a client that has the
		// answer then always finds it in the count, so that Cut, called
		// right after, counts from the right place. (Counted after, a proxy
		// goroutine descheduled in between let the next Cut start one
		// round trip early on a loaded machine.)
		last := head[0] == 'Q' || head[0] == 'S' || head[0] == 'H'
		var out io.Writer = s
		if last || p.rt.cut.Load() != 0 {
			out = &held
		}
		if head[0] == 'Q' {
			query, err := readBody(c, size)
			if err != nil {
				return false
			}
			if query == pingQuery {
				// Not counted nor cut (see pingQuery): it travels alone.
				if _, err := s.Write(append(head[:5:5], query...)); err != nil {
					return false
				}
				continue
			}
			if _, err := out.Write(append(head[:5:5], query...)); err != nil {
				return false
			}
		} else if head[0] == 'P' {
			body, err := readBody(c, size)
			if err != nil {
				return false
			}
			p.rt.parsed(body)
			if _, err := out.Write(append(head[:5:5], body...)); err != nil {
				return false
			}
		} else if err := forward(out, c, head[:5], size); err != nil {
			return false
		}
		if !last {
			continue
		}
		if f := p.beforeCount.Load(); f != nil {
			(*f)()
		}
		n := p.rt.n.Add(1)
		cut := n == p.rt.cut.Load()
		if cut {
			p.rt.cut.Store(0)
			if !p.rt.delivered.Load() {
				return false
			}
			mute.Store(true)
		}
		if _, err := held.WriteTo(s); err != nil {
			return false
		}
		if cut {
			// A round trip ended by a Flush commits nothing and gets no
			// ReadyForQuery to wait for: the connection goes at once, and
			// the server rolls back the transaction it opened, whether or
			// not it got that far.
			return head[0] != 'H'
		}
	}
}

// pingQuery is the simple query of pgconn's Ping, which database/sql's
// session reset (pgx's stdlib ResetSession) sends before reusing a
// connection that has been idle for more than a second. The proxy passes it
// on neither counted nor cut: it is the pool's, not part of the work a test
// counts, and whether it is sent depends on how long the connection sat
// idle, so counting it would move a cut to the wrong round trip on a slow
// machine (a pause of over a second before a cut shows it).
const pingQuery = "-- ping\x00"

// readBody reads a message body of size bytes from c.
func readBody(c io.Reader, size int) (string, error) {
	if size < 0 {
		return "", errors.New("storetest: malformed message")
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		return "", err
	}
	return string(body), nil
}

// answer copies the backend stream from s to c message by message (every
// backend message is a type byte and a length that counts itself; the tests
// disable SSL, so there is no untyped answer). Once mute is set it passes
// nothing on and returns at the next ReadyForQuery: the server has then
// carried out the round trip that was cut, its commit included, and the
// connection may close.
func answer(c io.Writer, s io.Reader, mute *atomic.Bool) {
	var head [5]byte
	for {
		if _, err := io.ReadFull(s, head[:]); err != nil {
			return
		}
		var out = c
		muted := mute.Load()
		if muted {
			out = io.Discard
		}
		if err := forward(out, s, head[:], int(binary.BigEndian.Uint32(head[1:5]))-4); err != nil {
			return
		}
		if muted && head[0] == 'Z' {
			return
		}
	}
}

// forward writes head and the next n bytes of c to s.
func forward(s io.Writer, c io.Reader, head []byte, n int) error {
	if n < 0 {
		return errors.New("storetest: malformed message")
	}
	if _, err := s.Write(head); err != nil {
		return err
	}
	_, err := io.CopyN(s, c, int64(n))
	return err
}

func (p *proxy) close() {
	p.ln.Close()
	p.closeConns()
	p.wg.Wait()
}

// closeConns drops every connection made so far.
func (p *proxy) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
