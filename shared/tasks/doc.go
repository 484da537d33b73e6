// Package tasks schedules the deliver function through Google Cloud Tasks: the
// one place that knows Cloud Tasks' name rules, deadlines and error codes
// (go-dependencies.md §2c, pitfall 9). [Scheduler.Schedule] creates one named
// HTTP task per (batch, due time), so scheduling twice is a no-op.
//
// The package does not decide when a batch is due or what deliver does with
// it, and it never retries beyond one short burst: a batch whose task could
// not be created stays committed in SQL and the sweep re-enqueues it
// (design.md, "Delivery with Cloud Tasks", steps 2 and 4). The local Cloud
// Tasks emulator that the same client talks to lives in package taskemu.
package tasks
