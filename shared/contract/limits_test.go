package contract_test

import (
	"testing"
	"time"

	"onorca.dev/push/shared/contract"
)

// TestLimitsPinTheContract pins every number of the contract (and of
// reference-behaviour where the contract is silent) to the value written
// there, so that a changed constant fails here and not only in tests that
// count up to the constant itself: the quota tests admit contract.AlertQuota
// alerts, which is 301 as readily as 300.
func TestLimitsPinTheContract(t *testing.T) {
	ints := []struct {
		name      string
		got, want int64
	}{
		{"MaxBodyBytes", contract.MaxBodyBytes, 16384},
		{"UnauthenticatedPerMinute", contract.UnauthenticatedPerMinute, 30},
		{"InvalidBearerPerMinute", contract.InvalidBearerPerMinute, 30},
		{"HostPerMinute", contract.HostPerMinute, 600},
		{"MaxOpaqueID", contract.MaxOpaqueID, 128},
		{"MaxTokenChars", contract.MaxTokenChars, 4096},
		{"MinAndroidTokenChars", contract.MinAndroidTokenChars, 32},
		{"MaxDevicesPerHost", contract.MaxDevicesPerHost, 64},
		{"MaxListedDevices", contract.MaxListedDevices, 1024},
		{"MaxRegistrationIDs", contract.MaxRegistrationIDs, 20},
		{"MaxNotificationID", contract.MaxNotificationID, 2048},
		{"MaxWorktreeID", contract.MaxWorktreeID, 2048},
		{"MaxTitle", contract.MaxTitle, 80},
		{"MaxBadge", contract.MaxBadge, 99999},
		{"MaxBody", contract.MaxBody, 180},
		{"MaxNotificationBytes", contract.MaxNotificationBytes, 3000},
		{"AlertQuota", contract.AlertQuota, 300},
		{"DismissQuota", contract.DismissQuota, 300},
		{"MaxBatchMembers", contract.MaxBatchMembers, 32},
		{"MaxProviderPayload", contract.MaxProviderPayload, 4096},
		{"BusyRetryAfterSeconds", contract.BusyRetryAfterSeconds, 1},
	}
	for _, tt := range ints {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d (the contract's number)", tt.name, tt.got, tt.want)
		}
	}
	durations := []struct {
		name      string
		got, want time.Duration
	}{
		{"QuotaWindow", contract.QuotaWindow, 15 * time.Minute},
		{"EventLifetime", contract.EventLifetime, 5 * time.Minute},
		{"DefaultCoalesce", contract.DefaultCoalesce, 3 * time.Second},
		{"MaxCoalesce", contract.MaxCoalesce, time.Minute},
		{"ChallengeTTL", contract.ChallengeTTL, 10 * time.Second},
		{"SessionTTL", contract.SessionTTL, 24 * time.Hour},
		{"LeaseDuration", contract.LeaseDuration, 30 * time.Second},
		{"MaxBackoff", contract.MaxBackoff, 30 * time.Second},
		{"FCMRetryMin", contract.FCMRetryMin, 10 * time.Second},
		{"FCMRateLimitedRetryMin", contract.FCMRateLimitedRetryMin, time.Minute},
		{"ProviderTimeout", contract.ProviderTimeout, 10 * time.Second},
		{"APNSTokenLifetime", contract.APNSTokenLifetime, 50 * time.Minute},
		{"Retention", contract.Retention, 24 * time.Hour},
	}
	for _, tt := range durations {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v (the contract's number)", tt.name, tt.got, tt.want)
		}
	}
}
