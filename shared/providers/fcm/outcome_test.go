package fcm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/push"
	"onorca.dev/push/shared/push/pushtest"
)

var android = push.Target{Platform: contract.PlatformAndroid, Token: token}

// TestSendOutcomes maps every kind of FCM answer through the real SDK and
// the stand-in (reference-behaviour §6, §7.2). Each send is one request:
// the SDK's hidden retries of a 503 never happen.
func TestSendOutcomes(t *testing.T) {
	clk, st, c := setup(t)
	date := clk.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name  string
		fault *standin.Fault
		want  push.Outcome
	}{
		{"accepted", nil, push.Outcome{Kind: push.Sent}},
		{"UNREGISTERED", &standin.Fault{Status: 404, Reason: "UNREGISTERED", Message: "Requested entity was not found."},
			push.Outcome{Kind: push.Dead, Reason: "UNREGISTERED"}},
		{"UNREGISTERED as a 400", &standin.Fault{Status: 400, Reason: "UNREGISTERED"},
			push.Outcome{Kind: push.Dead, Reason: "UNREGISTERED"}},
		{"INVALID_ARGUMENT about the token", &standin.Fault{Status: 400, Reason: "INVALID_ARGUMENT",
			Message: "The registration Token is not a valid FCM registration token"},
			push.Outcome{Kind: push.Dead, Reason: "INVALID_ARGUMENT"}},
		{"INVALID_ARGUMENT about something else", &standin.Fault{Status: 400, Reason: "INVALID_ARGUMENT",
			Message: "Invalid value at 'message.android.ttl'"},
			push.Outcome{Kind: push.Terminal, Reason: "INVALID_ARGUMENT"}},
		{"SENDER_ID_MISMATCH", &standin.Fault{Status: 403, Reason: "SENDER_ID_MISMATCH"},
			push.Outcome{Kind: push.Terminal, Reason: "PERMISSION_DENIED"}},
		{"429 is at least 60 s", &standin.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: "30"},
			push.Outcome{Kind: push.Retry, Reason: "RESOURCE_EXHAUSTED", RetryAfter: contract.FCMRateLimitedRetryMin}},
		{"429 honours a longer Retry-After", &standin.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: "120"},
			push.Outcome{Kind: push.Retry, Reason: "RESOURCE_EXHAUSTED", RetryAfter: 120 * time.Second}},
		{"429 with an HTTP date", &standin.Fault{Status: 429, Reason: "QUOTA_EXCEEDED", RetryAfter: date},
			push.Outcome{Kind: push.Retry, Reason: "RESOURCE_EXHAUSTED", RetryAfter: 90 * time.Second}},
		{"500 is at least 10 s", &standin.Fault{Status: 500, Reason: "INTERNAL"},
			push.Outcome{Kind: push.Retry, Reason: "INTERNAL", RetryAfter: contract.FCMRetryMin}},
		{"503 is at least 10 s, once", &standin.Fault{Status: 503, Reason: "UNAVAILABLE", Times: 5},
			push.Outcome{Kind: push.Retry, Reason: "UNAVAILABLE", RetryAfter: contract.FCMRetryMin}},
		{"503 honours a longer Retry-After", &standin.Fault{Status: 503, Reason: "UNAVAILABLE", RetryAfter: "45"},
			push.Outcome{Kind: push.Retry, Reason: "UNAVAILABLE", RetryAfter: 45 * time.Second}},
		{"reset", &standin.Fault{Reset: true, Times: 5},
			push.Outcome{Kind: push.Retry, Reason: "transport", RetryAfter: contract.FCMRetryMin}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.ClearFaults()
			st.ClearInbox()
			if tt.fault != nil {
				f := *tt.fault
				f.Provider, f.Token = standin.FCM, token
				if err := st.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			got := c.Send(context.Background(), android, pushtest.Cases()[0].Message())
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Send mismatch (-want +got):\n%s", diff)
			}
			if n := len(st.Inbox()); n != 1 {
				t.Errorf("stand-in saw %d requests, want 1", n)
			}
		})
	}
}

// TestSendTimeout: no answer within the deadline is a transport retry
// with FCM's minimum delay.
func TestSendTimeout(t *testing.T) {
	_, st, c := setup(t)
	if err := st.AddFault(standin.Fault{Provider: standin.FCM, Token: "*", Hang: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got := c.Send(ctx, android, pushtest.Cases()[0].Message())
	want := push.Outcome{Kind: push.Retry, Reason: push.ReasonTransport, RetryAfter: contract.FCMRetryMin}
	if got != want {
		t.Errorf("Send = %+v, want %+v", got, want)
	}
}

// TestSendExpired: no request once the deadline has passed, including
// when it passes while the access token is fetched.
func TestSendExpired(t *testing.T) {
	clk, st, c := setup(t)
	m := pushtest.Cases()[0].Message()
	expired := push.Outcome{Kind: push.Terminal, Reason: push.ReasonExpired}

	clk.Set(time.UnixMilli(m.Deadline))
	if got := c.Send(context.Background(), android, m); got != expired {
		t.Errorf("Send at the deadline = %+v, want %+v", got, expired)
	}

	clk.Set(time.UnixMilli(m.Deadline - 1))
	slow := fetchThen(func() { clk.Advance(time.Millisecond) })
	sc, err := fcm.New(context.Background(), fcm.Options{Clock: clk,
		ClientOptions: []option.ClientOption{option.WithEndpoint(st.FCMEndpoint()), option.WithTokenSource(slow)}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if got := sc.Send(context.Background(), android, m); got != expired {
		t.Errorf("Send when the token fetch passes the deadline = %+v, want %+v", got, expired)
	}
	if n := len(st.Inbox()); n != 0 {
		t.Errorf("stand-in saw %d requests, want 0", n)
	}
}

// TestCredentials: a token source's access token reaches FCM.
func TestCredentials(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(pushtest.Now))
	st := mustStandin(t, clk)
	c, err := fcm.New(context.Background(), fcm.Options{Clock: clk,
		ClientOptions: []option.ClientOption{option.WithEndpoint(st.FCMEndpoint()), option.WithTokenSource(fetchThen(func() {}))}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Send(context.Background(), android, pushtest.Cases()[0].Message()); got.Kind != push.Sent {
		t.Fatalf("Send = %+v, want sent", got)
	}
	if got := st.Inbox()[0].Headers["authorization"]; got != "Bearer access-token" {
		t.Errorf("authorization = %q, want %q", got, "Bearer access-token")
	}
}

// TestValidateOnly: the dry run carries validate_only and is accepted; a
// refusal is ErrNotAccepted.
func TestValidateOnly(t *testing.T) {
	_, st, c := setup(t)
	if err := c.ValidateOnly(context.Background(), token); err != nil {
		t.Fatalf("ValidateOnly = %v", err)
	}
	if body := string(st.Inbox()[0].Body); !strings.Contains(body, `"validate_only":true`) {
		t.Errorf("dry run body = %s, want validate_only", body)
	}
	st.AddFault(standin.Fault{Provider: standin.FCM, Token: "*", Status: 404, Reason: "UNREGISTERED"})
	if err := c.ValidateOnly(context.Background(), token); !errors.Is(err, fcm.ErrNotAccepted) {
		t.Errorf("ValidateOnly on a dead token = %v, want ErrNotAccepted", err)
	}
}

// TestStandinChecks: the stand-in refuses a wrong project, and the refusal
// is terminal, not dead.
func TestStandinChecks(t *testing.T) {
	clk := clock.NewManual(time.UnixMilli(pushtest.Now))
	st := mustStandin(t, clk)
	c, err := fcm.New(context.Background(), fcm.Options{ProjectID: "other", Endpoint: st.FCMEndpoint(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := c.Send(context.Background(), android, pushtest.Cases()[0].Message())
	if want := (push.Outcome{Kind: push.Terminal, Reason: "NOT_FOUND"}); got != want {
		t.Errorf("Send to another project = %+v, want %+v", got, want)
	}
}

// fetchThen is a token source that runs fn on every fetch.
type fetchThen func()

func (f fetchThen) Token() (*oauth2.Token, error) {
	f()
	return &oauth2.Token{AccessToken: "access-token", TokenType: "Bearer"}, nil
}
