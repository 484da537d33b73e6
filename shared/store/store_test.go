package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/store"
	"onorca.dev/push/shared/store/storetest"
)

func TestMigrateTwiceConcurrently(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			opts := d.Options(t)
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := store.Open(context.Background(), opts)
					if err == nil {
						err = s.Ping(context.Background())
						s.Close()
					}
					errs[i] = err
				}()
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("open %d: %v", i, err)
				}
			}
		})
	}
}

func register(t *testing.T, s *store.Store, host, device string) (string, error) {
	t.Helper()
	return s.RegisterDevice(context.Background(), host, contract.RegisterRequest{
		DeviceID: device, Platform: contract.PlatformAndroid, Token: fmt.Sprintf("%040d", len(device)),
	}, 1000)
}

func TestDeviceCapUnderConcurrency(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			s := storetest.Open(t, d)
			var wg sync.WaitGroup
			errs := make([]error, contract.MaxDevicesPerHost+6)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = register(t, s, "hostA", fmt.Sprintf("dev-%d", i))
				}()
			}
			wg.Wait()
			ok, full := 0, 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, contract.ErrTooManyDevices):
					full++
				default:
					t.Fatalf("register: %v", err)
				}
			}
			if ok != contract.MaxDevicesPerHost || full != 6 {
				t.Fatalf("registered %d, refused %d; want %d and 6", ok, full, contract.MaxDevicesPerHost)
			}
			// Re-registering at the cap succeeds and keeps the id.
			list, err := s.Devices(context.Background(), "hostA")
			if err != nil || len(list) != contract.MaxDevicesPerHost {
				t.Fatalf("Devices = %d rows, %v", len(list), err)
			}
			id, err := register(t, s, "hostA", list[0].DeviceID)
			if err != nil || id != list[0].RegistrationID {
				t.Fatalf("re-register = %q, %v; want %q", id, err, list[0].RegistrationID)
			}
		})
	}
}
