package service

import "testing"

// TestTraceProject: the trace project is the first delivery queue's, with
// one queue or several, and none without a queue.
func TestTraceProject(t *testing.T) {
	for in, want := range map[string]string{
		"": "",
		"projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver":                                                                               "onorca-cloud",
		"projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver,projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver-01": "onorca-cloud",
		"not a queue": "",
	} {
		if got := traceProject(in); got != want {
			t.Errorf("traceProject(%q) = %q, want %q", in, got, want)
		}
	}
}
