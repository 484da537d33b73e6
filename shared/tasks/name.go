package tasks

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
)

// taskIDLen is the number of hex digits of the task ID: 128 bits of SHA-256,
// far inside Cloud Tasks' 500-character TASK_ID limit (task.proto, Task.name).
const taskIDLen = 32

// queuePattern is the form of a full queue name (task.proto, Task.name):
// PROJECT_ID is letters, digits, hyphens, colons or periods; QUEUE_ID is
// letters, digits or hyphens, at most 100 characters.
var queuePattern = regexp.MustCompile(`^projects/[A-Za-z0-9:.-]+/locations/[A-Za-z0-9-]+/queues/[A-Za-z0-9-]{1,100}$`)

// taskID names the task that delivers batchID at dueMs. Cloud Tasks
// deduplicates a name for about 24 h, even after the task ran or was deleted,
// so the same (batch, due) pair maps to the same name and a repeated schedule
// is a no-op (go-dependencies.md §2c, pitfall 9). The ID is a hash rather than
// the readable pair because Google recommends hashed, non-sequential IDs:
// sequential prefixes concentrate load and add latency to named tasks. Hex
// digits fall inside TASK_ID's [A-Za-z0-9_-].
func taskID(batchID string, dueMs int64) string {
	sum := sha256.Sum256([]byte(batchID + "@" + strconv.FormatInt(dueMs, 10)))
	return hex.EncodeToString(sum[:])[:taskIDLen]
}

// taskName is the full name of the task that delivers batchID at dueMs in
// queue.
func taskName(queue, batchID string, dueMs int64) string {
	return queue + "/tasks/" + taskID(batchID, dueMs)
}
