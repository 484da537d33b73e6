package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/standin"
)

// readyTimeout bounds the wait for the emulator's ready line.
const readyTimeout = 30 * time.Second

// emulator is the emulator process, restarted on the same address and
// database after each kill.
type emulator struct {
	bin, addr, dir, databaseURL string
	stderr                      io.Writer
	cmd                         *exec.Cmd
	plain                       http.Client
}

func (e *emulator) origin() string { return "http://" + e.addr }

// start starts a process and waits for its ready line. The coalescing window
// is 0, so each alert is one provider request the check can find.
func (e *emulator) start(ctx context.Context) error {
	cmd := exec.Command(e.bin, "-addr", e.addr)
	cmd.Env = append(os.Environ(), "ORCA_PUSH_DATABASE_URL="+e.databaseURL, "ORCA_PUSH_DATA_DIR="+e.dir,
		"ORCA_PUSH_COALESCE_MS=0", "ORCA_PUSH_MANUAL_CLOCK=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = io.Discard // each refused request's reason: the fuzz of faults makes many
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan bool, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if strings.Contains(lines.Text(), "ready on ") {
				ready <- true
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	t := time.NewTimer(readyTimeout) // a process boundary: real time
	defer t.Stop()
	select {
	case <-ready:
		e.cmd = cmd
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	cmd.Process.Kill()
	cmd.Wait()
	return fmt.Errorf("the emulator printed no ready line on %s", e.addr)
}

// kill ends the process with SIGKILL.
func (e *emulator) kill() {
	if e.cmd != nil {
		e.cmd.Process.Kill()
		e.cmd.Wait()
		e.cmd = nil
	}
}

// control calls the control API and fails unless it answers 2xx.
func (e *emulator) control(ctx context.Context, method, path, body string) error {
	req, err := http.NewRequestWithContext(ctx, method, e.origin()+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := e.plain.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	return nil
}

// delivery is one provider request the stand-ins received.
type delivery struct {
	accepted          bool
	provider          standin.Provider
	token, id         string
	collapse, process string
	reason            string // the injected fault's that answered it, if one did
	receivedAt        int64
}

// inbox reads the stand-ins' inbox.
func (e *emulator) inbox(ctx context.Context) ([]delivery, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", e.origin()+"/_emulator/inbox", nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.plain.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	defer resp.Body.Close()
	var in struct {
		Deliveries []struct {
			Provider   standin.Provider  `json:"provider"`
			Status     int               `json:"status"`
			Reason     string            `json:"reason"`
			ReceivedAt int64             `json:"receivedAt"`
			Path       string            `json:"path"`
			Headers    map[string]string `json:"headers"`
			Body       struct {
				Orca struct {
					NotificationID string `json:"notificationId"`
				} `json:"orca"`
				Message struct {
					Token string `json:"token"`
					Data  struct {
						NotificationID string `json:"notificationId"`
					} `json:"data"`
					Android struct {
						CollapseKey string `json:"collapse_key"`
					} `json:"android"`
				} `json:"message"`
			} `json:"body"`
		} `json:"deliveries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&in); err != nil {
		return nil, fmt.Errorf("read inbox: %w", err)
	}
	pid := fmt.Sprint(e.cmd.Process.Pid)
	out := make([]delivery, len(in.Deliveries))
	for i, d := range in.Deliveries {
		b := d.Body
		out[i] = delivery{accepted: d.Status == http.StatusOK, provider: d.Provider, token: strings.TrimPrefix(d.Path, "/3/device/"),
			id: b.Orca.NotificationID, collapse: d.Headers["apns-collapse-id"], process: pid, reason: d.Reason, receivedAt: d.ReceivedAt}
		if b.Message.Token != "" {
			out[i].token, out[i].id, out[i].collapse = b.Message.Token, b.Message.Data.NotificationID, b.Message.Android.CollapseKey
		}
	}
	return out, nil
}

// providerFaults are the stand-in faults the soak injects besides kills:
// each is retried by the gateway and must not lose an alert.
var providerFaults = []struct {
	name string
	f    standin.Fault
}{
	{"apns 500", standin.Fault{Provider: standin.APNS, Token: "*", Status: 500, Reason: "InternalServerError", Times: 3}},
	{"apns 429", standin.Fault{Provider: standin.APNS, Token: "*", Status: 429, Reason: "TooManyRequests", RetryAfter: "1", Times: 3}},
	{"apns reset", standin.Fault{Provider: standin.APNS, Token: "*", Reset: true, Times: 2}},
	{"apns hang", standin.Fault{Provider: standin.APNS, Token: "*", Hang: true, Times: 1}},
	{"fcm 503", standin.Fault{Provider: standin.FCM, Token: "*", Status: 503, Reason: "UNAVAILABLE", RetryAfter: "1", Times: 3}},
	{"fcm 500", standin.Fault{Provider: standin.FCM, Token: "*", Status: 500, Reason: "INTERNAL", Times: 3}},
	{"fcm reset", standin.Fault{Provider: standin.FCM, Token: "*", Reset: true, Times: 2}},
	{"fcm hang", standin.Fault{Provider: standin.FCM, Token: "*", Hang: true, Times: 1}},
}

// killHang is the fault armed at both stand-ins before a kill: every
// request hangs until the process dies.
const killHang = 1_000_000

// injectFaults injects one fault at random times until ctx ends: a third of
// them kills, a sixth PostgreSQL restarts (with -private-postgres), the
// rest provider faults.
func (s *soak) injectFaults(ctx context.Context) error {
	for {
		wait := time.Duration(s.r.Int64N(int64(2 * s.o.faultEvery)))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		switch n := s.r.IntN(6); {
		case n < 2:
			if err := s.killAndRestart(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			continue
		case n == 2 && s.pg != nil:
			if err := s.pg.restart(context.WithoutCancel(ctx)); err != nil {
				return err
			}
			s.pgRestarts = append(s.pgRestarts, s.clk.Now().UnixMilli())
			s.faults["postgres restart"]++
			continue
		}
		f := providerFaults[s.r.IntN(len(providerFaults))]
		if err := s.arm(ctx, f.name, f.f, false); err != nil {
			if ctx.Err() == nil {
				return err
			}
			continue
		}
		s.faults[f.name]++
	}
}

// arm arms f at the stand-ins of the running process and records it, so
// that the check can tell when it held its provider. A fault whose arming
// failed is recorded too: it may have been armed all the same.
func (s *soak) arm(ctx context.Context, name string, f standin.Fault, kill bool) error {
	body, err := json.Marshal(f)
	if err != nil {
		return err
	}
	p := &s.procs[len(s.procs)-1]
	p.injections = append(p.injections, injection{name: name, provider: f.Provider, at: s.clk.Now().UnixMilli(),
		times: max(f.Times, 1), hang: f.Hang, kill: kill})
	return s.em.control(ctx, "POST", "/_emulator/faults", string(body))
}

// killAndRestart makes every provider request hang, so that nothing is
// accepted any more, keeps the inbox, kills the process with SIGKILL and
// starts another.
func (s *soak) killAndRestart(ctx context.Context) error {
	for _, p := range []standin.Provider{standin.APNS, standin.FCM} {
		if err := s.arm(ctx, "kill", standin.Fault{Provider: p, Token: "*", Hang: true, Times: killHang}, true); err != nil {
			return err
		}
	}
	in, err := s.em.inbox(ctx)
	if err != nil {
		return err
	}
	s.inboxes = append(s.inboxes, in)
	s.em.kill()
	p := &s.procs[len(s.procs)-1]
	p.end, p.killed = s.clk.Now().UnixMilli(), true
	s.kills++
	s.procs = append(s.procs, process{})
	return s.em.start(ctx)
}

// drain waits until every recipient of every accepted alert is in a final
// state, or -drain passed, and returns the receipts of each host's alerts.
func (s *soak) drain(ctx context.Context) ([][]contract.Receipt, error) {
	const poll = 2 * time.Second
	for polls := int(s.o.drain / poll); ; polls-- {
		all := make([][]contract.Receipt, len(s.hosts))
		final := true
		for i, h := range s.hosts {
			events := make([]contract.EventRef, len(h.accepted))
			for j, a := range h.accepted {
				events[j] = contract.EventRef{Kind: a.n.EffectiveKind(), Epoch: a.n.Epoch, Seq: a.n.Seq}
			}
			rs, err := h.c.Receipts(ctx, events)
			if err != nil {
				return nil, err
			}
			all[i] = rs
			for _, r := range rs {
				for _, rr := range r.Recipients {
					final = final && rr.Status.Final()
				}
				final = final && r.Known
			}
		}
		if final || polls <= 0 {
			return all, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll): // a process boundary: real time
		}
	}
}
