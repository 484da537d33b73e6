package routes_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/obs"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

// TestBadBytesAre400: a NUL, another control character or bytes that are
// not UTF-8 where the contract wants an id is 400 invalid_request on both
// databases, changes no row and logs no failure: in a registration's path,
// in an unauthenticated challengeId. (deviceId, registrationIds and
// notificationEpoch are in the contracttest tables that
// TestRegisterValidation and functions/send's TestSendInvalid run on both
// databases.) PostgreSQL used to answer 500 and log an error for each, which
// any client could provoke: for a control character because it cannot store
// NUL, for bytes that are not UTF-8 in a path (%ff, %c3, a surrogate) with
// SQLSTATE 22021 (issue 26 §1). A body cannot carry such bytes into an id:
// JSON decoding turns them into U+FFFD, as JSON.parse does.
func TestBadBytesAre400(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			token := mustSignIn(t, g.mustHost(t))
			g.svc.Counters.Consume()
			requests := []struct {
				name, method, path, body string
				header                   http.Header
			}{
				{"delete nul", "DELETE", "/v1/devices/a%00b", "", bearerHeader(token)},
				{"delete newline", "DELETE", "/v1/devices/a%0Ab", "", bearerHeader(token)},
				{"delete C1", "DELETE", "/v1/devices/a%C2%85", "", bearerHeader(token)},
				{"delete invalid byte", "DELETE", "/v1/devices/%ff", "", bearerHeader(token)},
				{"delete truncated sequence", "DELETE", "/v1/devices/%c3", "", bearerHeader(token)},
				{"delete surrogate", "DELETE", "/v1/devices/%ed%a0%80", "", bearerHeader(token)},
				{"delete overlong", "DELETE", "/v1/devices/a%c0%afb", "", bearerHeader(token)},
				{"challenge id nul", "POST", "/v1/host/session",
					`{"v":1,"challengeId":"c\u0000","proofB64":"` + zeroKey + `"}`, g.freshIP()},
				{"challenge id escape", "POST", "/v1/host/session",
					`{"v":1,"challengeId":"c\u001b[1m","proofB64":"` + zeroKey + `"}`, g.freshIP()},
			}
			for _, tt := range requests {
				before := g.rowCounts(t)
				status, body := g.do(t, tt.method, tt.path, tt.body, tt.header)
				if status != http.StatusBadRequest || body != `{"error":"invalid_request"}` {
					t.Errorf("%s: %s %s = %d %s, want 400 invalid_request", tt.name, tt.method, tt.path, status, body)
				}
				g.mustUnchanged(t, before)
			}
			if n := g.svc.Counters.Consume()[obs.RequestError]; n != 0 {
				t.Errorf("%d requests failed with an internal error, want none", n)
			}
		})
	}
}

// zeroKey is a well-formed proof that proves nothing.
const zeroKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// TestUnusualStringsAreStored: every string the contract lets in is stored
// and read back unchanged on both databases: a deviceId outside ASCII, and
// control characters (NUL among them) in a notification's title, body and
// worktreeId, which live inside the batch's JSON.
func TestUnusualStringsAreStored(t *testing.T) {
	ctx := context.Background()
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			g := mustGateway(t, d)
			h := g.mustHost(t)
			p := android("phone")
			p.DeviceID = "téléphone 😀 \u00a0"
			id, err := h.Register(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			list, err := h.Devices(ctx)
			if err != nil || len(list) != 1 || list[0].DeviceID != "téléphone 😀 \u00a0" {
				t.Fatalf("Devices = %+v, %v; want the device id as registered", list, err)
			}
			n := contract.Notification{NotificationID: "n1", Seq: 1, Epoch: "e1", Source: contract.SourcePlugin,
				Title: "a\x00b\x07c\u0085", Body: "line\nnext\x00", WorktreeID: "w\x00\x1f"}
			res, err := h.Send(ctx, []string{id}, n)
			if err != nil || len(res) != 1 || res[0].Status != contract.StatusQueued {
				t.Fatalf("Send = %v, %v; want queued", res, err)
			}
			batches, err := g.svc.Store.RegistrationBatches(ctx, id)
			if err != nil || len(batches) != 1 || batches[0].State != store.BatchPending {
				t.Fatalf("RegistrationBatches = %+v, %v; want one pending", batches, err)
			}
			members, err := delivery.OpenMembers(g.svc.Config.PayloadKeys, batches[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]contract.Notification{n}, members); diff != "" {
				t.Errorf("stored notification (-sent +stored):\n%s", diff)
			}
		})
	}
}
