// Package standin runs local stand-ins for APNs and FCM that the real apns2
// and firebase clients talk to: APNs over HTTP/2 with TLS (one listener per
// environment, a self-signed certificate, ES256 provider tokens checked) and
// FCM's v1 messages:send over plain HTTP. Both record every request in one
// inbox, in arrival order, and answer injected faults, as design.md's
// "The emulator" describes for /_emulator/inbox and /_emulator/faults.
//
// Tests and the emulator use it; production code never does. It exports a
// Go API only: the emulator's control routes are the emulator's.
package standin
