// Package taskemu is a local stand-in for Google Cloud Tasks: an in-memory
// gRPC server that the real cloudtasks client talks to (design.md, "The
// emulator"), which dispatches HTTP tasks to their targets at their schedule
// time and retries failures the way Cloud Tasks does.
//
// It keeps the behaviour orca-push relies on: named tasks are deduplicated
// for 24 h even after they ran or were deleted, schedule times come from a
// shared clock, a 2xx answer completes a task and anything else is
// retried with exponential backoff until the attempts run out. It implements
// CreateTask, GetTask, ListTasks, DeleteTask and RunTask for HTTP tasks only;
// queues are not modelled (any queue name is accepted, and every queue uses
// [Options.Retry]). OIDC and OAuth tokens are fake (see [OIDCTokenPrefix]).
//
// Under a manual clock nothing dispatches on its own: [Emulator.RunDue] runs
// what is due. It is a test double and must never serve production traffic.
package taskemu
