package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"onorca.dev/push/shared/clock"
	"onorca.dev/push/shared/config"
	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/providers/apns"
	"onorca.dev/push/shared/providers/fcm"
	"onorca.dev/push/shared/providers/standin"
	"onorca.dev/push/shared/service"
	"onorca.dev/push/shared/tasks"
	"onorca.dev/push/shared/tasks/taskemu"
)

// Paths of the private functions inside the emulator; in production each is
// a service of its own that Cloud Tasks and Cloud Scheduler call.
const (
	deliverPath = "/_internal/deliver"
	sweepPath   = "/_internal/sweep"
	// localQueue is the path of the first queue the local Cloud Tasks
	// emulator serves; the others are localQueue-01, -02...
	localQueue = "projects/local/locations/local/queues/orca-push"
)

// localQueues names n delivery queues as Terraform names them: the first
// keeps the one queue's name.
func localQueues(n int) []string {
	qs := []string{localQueue}
	for i := 1; i < n; i++ {
		qs = append(qs, fmt.Sprintf("%s-%02d", localQueue, i))
	}
	return qs
}

// local is what stands in for Google and Apple: the Cloud Tasks emulator
// (reached by the real cloudtasks client over gRPC), the APNs and FCM
// stand-ins (reached by the real apns2 and firebase clients), and the clients
// pointed at them.
type local struct {
	tasks     *taskemu.Emulator
	grpc      *grpc.Server
	standins  *standin.Server
	scheduler *tasks.Scheduler
	queues    []string // the delivery queues, in the scheduler's order
	// tasksClient reaches the Cloud Tasks emulator, for another Scheduler
	// (tests: an instance of an older release, with another queue list).
	tasksClient []option.ClientOption
	apns        *apns.Client
	fcm         *fcm.Client
}

// APNs credentials of the stand-in: a key made at start, and ids of the
// right shape.
const (
	localKeyID  = "EMULATORK1"
	localTeamID = "EMULATORT1"
)

func startLocal(ctx context.Context, clk clock.Clock, manual bool, cfg config.Config, origin string, q queueOptions) (*local, error) {
	l := &local{queues: localQueues(max(q.count, 1))}
	ok := false
	defer func() {
		if !ok {
			l.close()
		}
	}()
	var err error
	// The dispatcher outlives ctx: the process pauses and drains it when
	// it shuts down, so that a delivery in flight finishes (run).
	l.tasks, err = taskemu.New(context.WithoutCancel(ctx), taskemu.Options{
		Clock: clk, Manual: manual, Rate: q.rate, MaxConcurrent: q.concurrency,
		HTTPClient: &http.Client{Timeout: contract.ProviderTimeout + 20*time.Second},
	})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l.grpc = grpc.NewServer()
	l.tasks.Register(l.grpc)
	go l.grpc.Serve(lis)

	l.tasksClient = []option.ClientOption{
		option.WithEndpoint(lis.Addr().String()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
	l.scheduler, err = tasks.New(ctx, tasks.Options{Queues: l.queues, DeliverURL: origin + deliverPath,
		ClientOptions: l.tasksClient})
	if err != nil {
		return nil, err
	}

	key, err := standin.GenerateAPNSKey()
	if err != nil {
		return nil, err
	}
	l.standins, err = standin.Start(standin.Options{
		Clock: clk, APNSKey: key, APNSKeyID: localKeyID, APNSTeamID: localTeamID,
		APNSTopic: cfg.APNSTopic, FCMProjectID: cfg.FCMProjectID,
	})
	if err != nil {
		return nil, err
	}
	l.apns, err = apns.New(apns.Options{
		Key: key, KeyID: localKeyID, TeamID: localTeamID, Topic: cfg.APNSTopic, Clock: clk,
		SandboxURL:    l.standins.APNSURL(contract.APNSSandbox),
		ProductionURL: l.standins.APNSURL(contract.APNSProduction),
		RootCAs:       l.standins.RootCAs(),
	})
	if err != nil {
		return nil, err
	}
	fcmOpts := service.FCMOptions(cfg, clk)
	fcmOpts.Endpoint = l.standins.FCMEndpoint()
	l.fcm, err = fcm.New(ctx, fcmOpts)
	if err != nil {
		return nil, fmt.Errorf("fcm: %w", err)
	}
	ok = true
	return l, nil
}

// close stops what started; the errors of closing in-memory stand-ins and
// clients tell nothing worth acting on.
func (l *local) close() {
	if l.scheduler != nil {
		l.scheduler.Close()
	}
	if l.tasks != nil {
		l.tasks.Close()
	}
	if l.grpc != nil {
		l.grpc.Stop()
	}
	if l.apns != nil {
		l.apns.Close()
	}
	if l.fcm != nil {
		l.fcm.Close()
	}
	if l.standins != nil {
		l.standins.Close()
	}
}
