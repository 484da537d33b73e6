package tasks

import (
	"regexp"
	"strings"
	"testing"
)

func TestTaskID(t *testing.T) {
	allowed := regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
	tests := []struct {
		name    string
		batchID string
		dueMs   int64
	}{
		{"uuid", "0b9c3c52-6f6e-4d0a-9a53-2f1e1f2b8f0e", 1_800_000_003_000},
		{"empty batch", "", 0},
		{"odd characters", "a/b@c d.é", -1},
		{"long batch", strings.Repeat("x", 2000), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := taskID(tt.batchID, tt.dueMs, "")
			if !allowed.MatchString(id) {
				t.Errorf("taskID(%q, %d) = %q, want [A-Za-z0-9_-]{1,500}", tt.batchID, tt.dueMs, id)
			}
			if again := taskID(tt.batchID, tt.dueMs, ""); again != id {
				t.Errorf("taskID(%q, %d) = %q, then %q, want the same", tt.batchID, tt.dueMs, id, again)
			}
			if other := taskID(tt.batchID, tt.dueMs+1, ""); other == id {
				t.Errorf("taskID(%q, %d) = taskID(…, %d) = %q, want different", tt.batchID, tt.dueMs, tt.dueMs+1, id)
			}
			keyed := taskID(tt.batchID, tt.dueMs, "lease-1")
			if keyed == id || !allowed.MatchString(keyed) {
				t.Errorf("taskID(%q, %d, %q) = %q, want another valid id than without a key (%q)", tt.batchID, tt.dueMs, "lease-1", keyed, id)
			}
			if other := taskID(tt.batchID, tt.dueMs, "lease-2"); other == keyed {
				t.Errorf("taskID with keys lease-1 and lease-2 = %q, want different", keyed)
			}
		})
	}
	// Pin the derivation: a changed name would defeat deduplication across
	// a deploy for tasks already queued.
	if got, want := taskID("b1", 1_800_000_000_000, ""), "9ca2b404cf2dc94e2a4c37e4df3c5473"; got != want {
		t.Errorf("taskID(%q, %d) = %q, want %q", "b1", 1_800_000_000_000, got, want)
	}
	if got, want := taskName("projects/p/locations/l/queues/q", "b", 1, "k"), "projects/p/locations/l/queues/q/tasks/"+taskID("b", 1, "k"); got != want {
		t.Errorf("taskName() = %q, want %q", got, want)
	}
}

func TestProject(t *testing.T) {
	for queue, want := range map[string]string{
		"projects/onorca-cloud/locations/us-central1/queues/orca-push-deliver": "onorca-cloud",
		"projects/example.com:p/locations/europe-west1/queues/q":               "example.com:p",
		"":                                  "",
		"projects/p/locations/l":            "",
		"projects//locations/l/queues/q":    "",
		"x/projects/p/locations/l/queues/q": "",
	} {
		if got := Project(queue); got != want {
			t.Errorf("Project(%q) = %q, want %q", queue, got, want)
		}
	}
}
