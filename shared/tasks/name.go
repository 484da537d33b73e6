package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

// taskIDLen is the number of hex digits of the task ID: 128 bits of SHA-256,
// far inside Cloud Tasks' 500-character TASK_ID limit (task.proto, Task.name).
const taskIDLen = 32

// queuePattern is the form of a full queue name (task.proto, Task.name):
// PROJECT_ID is letters, digits, hyphens, colons or periods; QUEUE_ID is
// letters, digits or hyphens, at most 100 characters.
var queuePattern = regexp.MustCompile(`^projects/[A-Za-z0-9:.-]+/locations/[A-Za-z0-9-]+/queues/[A-Za-z0-9-]{1,100}$`)

// Project returns the project of a full queue name, "" when queue is not
// one: the project the functions run in, where their logs and traces go.
func Project(queue string) string {
	if !queuePattern.MatchString(queue) {
		return ""
	}
	project, _, _ := strings.Cut(strings.TrimPrefix(queue, "projects/"), "/")
	return project
}

// taskID names the task that delivers batchID at dueMs for key. Cloud Tasks
// deduplicates a name for about 24 h, even after the task ran or was deleted,
// so the same (batch, due, key) maps to the same name and a repeated schedule
// is a no-op (go-dependencies.md §2c, pitfall 9). The key keeps a wake-up
// apart from the batch's own task for the same millisecond, which under a
// manual clock is the rule rather than the exception; an empty key leaves
// the name what it was before keys existed. The ID is a hash rather than the
// readable triple because Google recommends hashed, non-sequential IDs:
// sequential prefixes concentrate load and add latency to named tasks. Hex
// digits fall inside TASK_ID's [A-Za-z0-9_-].
func taskID(batchID string, dueMs int64, key string) string {
	name := batchID + "@" + strconv.FormatInt(dueMs, 10)
	if key != "" {
		name += "#" + key
	}
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:taskIDLen]
}

// taskName is the full name of the task that delivers batchID at dueMs for
// key in queue.
func taskName(queue, batchID string, dueMs int64, key string) string {
	return queue + "/tasks/" + taskID(batchID, dueMs, key)
}
