package hostauth

import "fmt"

// SealForTest builds a challenge whose transcript is t verbatim, sealed with
// s to hostPub, whatever t says. The wire answer takes its ephemeral key and
// nonce from s and its challenge id and expiry from t. Only tests call it: it
// crafts challenges whose transcript disagrees with the envelope, its
// recipient or the clock, to exercise each host-side check. The gateway
// issues challenges with [NewChallenge] alone.
func SealForTest(s Seed, t Transcript, hostPub []byte) (Challenge, error) {
	c, err := seal(s, t, hostPub)
	if err != nil {
		return Challenge{}, fmt.Errorf("seal for test: %w", err)
	}
	return c, nil
}
