package tasks_test

import (
	"errors"
	"testing"

	"onorca.dev/push/shared/tasks"
)

func TestParseDeliverRequest(t *testing.T) {
	got, err := tasks.ParseDeliverRequest([]byte(`{"batchId":"b1","dueAt":5}`))
	if err != nil || got != (tasks.DeliverRequest{BatchID: "b1", DueAt: 5}) {
		t.Fatalf("ParseDeliverRequest = %+v, %v", got, err)
	}
	for _, body := range []string{``, `{}`, `{"batchId":""}`, `{"batchId":"b","x":1}`, `{"batchId":"b"} {}`, `[]`} {
		if _, err := tasks.ParseDeliverRequest([]byte(body)); !errors.Is(err, tasks.ErrBadRequest) {
			t.Errorf("ParseDeliverRequest(%q) = %v, want ErrBadRequest", body, err)
		}
	}
}
