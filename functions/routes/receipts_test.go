package routes_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/contract/contracttest"
	"onorca.dev/push/shared/store/storetest"
)

// POST /v1/receipts refuses every malformed body with 400 invalid_request and
// writes nothing; a valid one writes nothing either.
func TestReceiptsValidation(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			ctx := context.Background()
			h := g.mustHost(t)
			token := mustSignIn(t, h)
			// Rows a refused request must not touch: a phone, an event,
			// its recipient and batch.
			reg, err := h.Register(ctx, android("phone"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Send(ctx, []string{reg}, contract.Notification{NotificationID: "n1", Seq: 1, Epoch: "e1",
				Source: contract.SourcePlugin, Title: "t"}); err != nil {
				t.Fatal(err)
			}
			for _, tt := range contracttest.Receipts() {
				t.Run(tt.Name, func(t *testing.T) {
					before := g.rowCounts(t)
					status, body := g.do(t, "POST", "/v1/receipts", tt.Body, bearerHeader(token))
					switch {
					case tt.OK && (status != 200 || !strings.HasPrefix(body, `{"receipts":[`)):
						t.Fatalf("POST /v1/receipts = %d %s, want 200", status, body)
					case !tt.OK && (status != 400 || body != `{"error":"invalid_request"}`):
						t.Fatalf("POST /v1/receipts = %d %s, want 400 invalid_request", status, body)
					}
					g.mustUnchanged(t, before)
				})
			}
		})
	}
}

// The edge of /v1/receipts is /v1/send's: the bearer first (before the body
// cap), the cap, the method, and the per-host bucket that the host's other
// routes spend.
func TestReceiptsEdge(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			token := mustSignIn(t, g.mustHost(t))
			valid := contracttest.ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":1`)
			before := g.rowCounts(t)
			tests := []struct {
				name, method, body string
				header             http.Header
				status             int
				want               string
			}{
				{"no bearer", "POST", valid, nil, 401, `{"error":"invalid_token"}`},
				{"unknown bearer", "POST", valid, bearerHeader(otherToken(token)), 401, `{"error":"invalid_token"}`},
				{"oversized without bearer", "POST", oversized(valid), nil, 401, `{"error":"invalid_token"}`},
				{"oversized", "POST", oversized(valid), bearerHeader(token), 413, `{"error":"request_too_large"}`},
				{"GET", "GET", "", bearerHeader(token), 405, `{"error":"method_not_allowed"}`},
			}
			for _, tt := range tests {
				if status, body := g.do(t, tt.method, "/v1/receipts", tt.body, tt.header); status != tt.status || body != tt.want {
					t.Errorf("%s: %d %s, want %d %s", tt.name, status, body, tt.status, tt.want)
				}
			}
			g.mustUnchanged(t, before)
		})
	}
}

// Receipts spend the host's bucket, shared with its sends, and no quota.
func TestReceiptsSpendTheHostBucket(t *testing.T) {
	g := mustGateway(t, storetest.Dialects(t)[0])
	token := mustSignIn(t, g.mustHost(t))
	valid := contracttest.ReceiptsJSON(`"notificationEpoch":"e1","notificationSeq":1`)
	for i := range contract.HostPerMinute {
		if status, body := g.do(t, "POST", "/v1/receipts", valid, bearerHeader(token)); status != 200 {
			t.Fatalf("receipts %d = %d %s", i+1, status, body)
		}
	}
	if status, body := g.do(t, "POST", "/v1/send", contracttest.SendJSON(""), bearerHeader(token)); status != 429 {
		t.Fatalf("send after %d receipts = %d %s, want 429", contract.HostPerMinute, status, body)
	}
	g.clock.Advance(contract.BucketWindow)
	// 600 receipts spent no alert of the quota: the next send is queued or
	// error (r1 is no registration of the host), never rate_limited.
	if status, body := g.do(t, "POST", "/v1/send", contracttest.SendJSON(""), bearerHeader(token)); status != 200 ||
		strings.Contains(body, "rate_limited") {
		t.Fatalf("send a minute later = %d %s, want 200 without rate_limited", status, body)
	}
}
