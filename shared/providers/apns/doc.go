// Package apns sends push messages to Apple's APNs through sideshow/apns2:
// it builds the request of reference-behaviour §7.1 from a [push.Message],
// signs one shared ES256 provider token, keeps one HTTP/2 connection per
// environment, and maps APNs' answer to a [push.Outcome] (§6, §7.1).
//
// It never retries, sleeps or logs: a retry is the caller's new task.
package apns
