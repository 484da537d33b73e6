package standin

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
)

// Options configures [Start].
type Options struct {
	// Clock stamps inbox entries; the emulator passes its shared clock.
	// Required.
	Clock clock.Clock
	// APNSKey is the .p8 PEM whose public half checks provider tokens
	// ([GenerateAPNSKey] makes one). Required.
	APNSKey []byte
	// APNSKeyID and APNSTeamID are the kid and iss a token must carry.
	APNSKeyID  string
	APNSTeamID string
	// APNSTopic is the only apns-topic accepted; empty means
	// contract.DefaultAPNSTopic.
	APNSTopic string
	// FCMProjectID is the only project served; empty means
	// contract.DefaultFCMProjectID.
	FCMProjectID string
	// InboxLimit, when positive, bounds the inbox to about that many of the
	// latest requests (benchmarks); 0 keeps every request.
	InboxLimit int
}

// Server is a running pair of stand-ins. Its methods are safe for
// concurrent use.
type Server struct {
	clock      clock.Clock
	apnsKey    *ecdsa.PublicKey
	keyID      string
	teamID     string
	topic      string
	project    string
	inboxLimit int
	roots      *x509.CertPool
	sandbox    *apnsListener
	production *apnsListener
	fcmURL     string
	servers    []*http.Server
	done       chan struct{}
	closeOnce  sync.Once

	// mu guards inbox, faults and verified.
	mu     sync.Mutex
	inbox  []Delivery
	faults []Fault
	// verified remembers provider tokens whose signature checked out, as
	// APNs does, so a reused token is not verified on every request.
	verified map[string]bool
}

// maxVerified bounds the verified set; it is emptied when full.
const maxVerified = 64

// apnsListener is one APNs environment's listener.
type apnsListener struct {
	url        string
	handshakes atomic.Int64
}

// Errors.
var (
	// ErrMissingOption is returned by Start when Clock or APNSKey is
	// missing.
	ErrMissingOption = errors.New("standin: missing option")
	// ErrBadFault is returned by AddFault for a fault naming no known
	// provider, or with a status outside 100..599 and neither Hang nor
	// Reset.
	ErrBadFault = errors.New("standin: bad fault")
	// errBadKey is returned by Start when Options.APNSKey is not a P-256
	// .p8 key.
	errBadKey = errors.New("standin: APNSKey is not a PKCS#8 P-256 PEM key")
	// errBadJWT is returned by verifyJWT for any token APNs would refuse
	// with InvalidProviderToken.
	errBadJWT = errors.New("standin: invalid provider token")
)

// Start starts the stand-ins on 127.0.0.1 ports chosen by the system: two
// HTTP/2 TLS listeners for APNs (sandbox and production) and one plain HTTP
// listener for FCM. Close stops them.
func Start(opts Options) (*Server, error) {
	if opts.Clock == nil || len(opts.APNSKey) == 0 {
		return nil, fmt.Errorf("%w: Clock and APNSKey are required", ErrMissingOption)
	}
	pub, err := publicKey(opts.APNSKey)
	if err != nil {
		return nil, err
	}
	s := &Server{
		clock: opts.Clock, apnsKey: pub, keyID: opts.APNSKeyID, teamID: opts.APNSTeamID,
		topic: opts.APNSTopic, project: opts.FCMProjectID, inboxLimit: opts.InboxLimit,
		done: make(chan struct{}), verified: make(map[string]bool),
	}
	if s.topic == "" {
		s.topic = contract.DefaultAPNSTopic
	}
	if s.project == "" {
		s.project = contract.DefaultFCMProjectID
	}
	cert, roots, err := selfSigned()
	if err != nil {
		return nil, fmt.Errorf("start stand-in: %w", err)
	}
	s.roots = roots
	if s.sandbox, err = s.startAPNS(cert, HostAPNSSandbox); err == nil {
		if s.production, err = s.startAPNS(cert, HostAPNSProduction); err == nil {
			err = s.startFCM()
		}
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("start stand-in: %w", err)
	}
	return s, nil
}

// startAPNS serves one APNs environment over HTTP/2 only, as APNs does.
func (s *Server) startAPNS(cert tls.Certificate, host string) (*apnsListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &apnsListener{url: "https://" + ln.Addr().String()}
	var protocols http.Protocols
	protocols.SetHTTP2(true)
	srv := &http.Server{
		Handler:   s.apnsHandler(host),
		Protocols: &protocols,
		ErrorLog:  log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
			// GetConfigForClient runs once per ClientHello: it counts
			// handshakes, so benchmarks can show connections are reused.
			GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
				l.handshakes.Add(1)
				return nil, nil
			},
		},
	}
	s.servers = append(s.servers, srv)
	go srv.ServeTLS(ln, "", "")
	return l, nil
}

// startFCM serves FCM's v1 API over plain HTTP.
func (s *Server) startFCM() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.fcmURL = "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(s.serveFCM), ErrorLog: log.New(io.Discard, "", 0)}
	s.servers = append(s.servers, srv)
	go srv.Serve(ln)
	return nil
}

// Close stops every listener and releases hanging requests.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		for _, srv := range s.servers {
			srv.Close()
		}
	})
}

// APNSURL returns the base URL of env's listener, for apns2's Client.Host.
// Any environment other than sandbox is production.
func (s *Server) APNSURL(env contract.APNSEnvironment) string { return s.listener(env).url }

// TLSHandshakes returns how many TLS handshakes env's listener has seen.
func (s *Server) TLSHandshakes(env contract.APNSEnvironment) int64 {
	return s.listener(env).handshakes.Load()
}

func (s *Server) listener(env contract.APNSEnvironment) *apnsListener {
	if env == contract.APNSSandbox {
		return s.sandbox
	}
	return s.production
}

// RootCAs returns a pool trusting the APNs listeners' certificate.
func (s *Server) RootCAs() *x509.CertPool { return s.roots }

// FCMEndpoint returns the FCM endpoint with its /v1 prefix, for
// option.WithEndpoint.
func (s *Server) FCMEndpoint() string { return s.fcmURL + "/v1" }

// FCMProjectID returns the project the FCM stand-in serves.
func (s *Server) FCMProjectID() string { return s.project }
