package service

import (
	"context"
	"fmt"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/delivery"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/tasks"
)

// Compile-time checks that the concrete clients are what delivery needs.
var (
	_ delivery.Scheduler = (*tasks.Scheduler)(nil)
	_ delivery.Provider  = (*apns.Client)(nil)
	_ delivery.Provider  = (*fcm.Client)(nil)
)

// deployedDeps builds the scheduler and providers a deployed function uses
// from its configuration: Cloud Tasks when a queue is configured (else none:
// the sweep then finds the batches), APNs with the configured key
// (unconfigured without one), FCM with the runtime service account's
// credentials and the configured message form. None of them connects here.
func deployedDeps(ctx context.Context, cfg config.Config, clk clock.Clock) (Options, error) {
	o := Options{Scheduler: delivery.NopScheduler{}}
	if cfg.TasksQueue != "" {
		s, err := tasks.New(ctx, tasks.Options{
			Queues: tasks.ParseQueues(cfg.TasksQueue), DeliverURL: cfg.DeliverURL,
			ServiceAccount: cfg.TasksServiceAccount, Audience: cfg.TasksAudience,
		})
		if err != nil {
			return o, fmt.Errorf("service: %w", err)
		}
		o.Scheduler = s
	}
	a, err := apns.New(apns.Options{
		Key: []byte(cfg.APNSKey), KeyID: cfg.APNSKeyID, TeamID: cfg.AppleTeamID, Topic: cfg.APNSTopic, Clock: clk,
	})
	if err != nil {
		return o, fmt.Errorf("service: %w", err)
	}
	o.APNS = a
	f, err := fcm.New(ctx, FCMOptions(cfg, clk))
	if err != nil {
		return o, fmt.Errorf("service: %w", err)
	}
	o.FCM = f
	return o, nil
}

// FCMOptions returns the FCM client options cfg asks for: its project and
// message form (ORCA_PUSH_FCM_MESSAGE=data sends every message data-only,
// unsealed alerts included). The deployed functions and the emulator, which
// adds its stand-in's endpoint, both build their client from it, so the
// emulator's tests hold the deployed rule too.
func FCMOptions(cfg config.Config, clk clock.Clock) fcm.Options {
	return fcm.Options{ProjectID: cfg.FCMProjectID, Clock: clk, DataOnly: cfg.FCMMessage == config.FCMData}
}
