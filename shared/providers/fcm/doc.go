// Package fcm sends push messages to Firebase Cloud Messaging through the
// firebase Admin SDK: it builds the v1 message of reference-behaviour §7.2
// from a [push.Message] and maps FCM's answer to a [push.Outcome] (§6,
// §7.2).
//
// Each Send makes exactly one HTTP request: the SDK's hidden retries of a
// 503 or a network error (go-dependencies §2d) are cut off after the first
// attempt, since a retry is the caller's new task. It never logs.
package fcm
