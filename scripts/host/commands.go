package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"onorca.dev/push/shared/contract"
	"onorca.dev/push/shared/hostclient"
)

// noArgs refuses positional arguments.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

func signinFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		if err := h.do(ctx, func() error { return h.client.SignIn(ctx) }); err != nil {
			return err
		}
		fingerprint := h.kp.Fingerprint()
		_, expiresAt := h.client.Session()
		text := fmt.Sprintf("signed in to %s as host %s until %s\n", c.gateway, fingerprint,
			time.UnixMilli(expiresAt).UTC().Format(time.RFC3339))
		if h.created {
			text = "created host key " + c.keyPath + "\n" + text
		}
		c.print(struct {
			Gateway         string `json:"gateway"`
			HostFingerprint string `json:"hostFingerprint"`
			ExpiresAt       int64  `json:"expiresAt"`
			KeyCreated      bool   `json:"keyCreated"`
		}{c.gateway, fingerprint, expiresAt, h.created}, text)
		return nil
	}
}

func registerFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	token := fs.String("token", "", "the phone's push token (default: a random valid one)")
	sandbox := fs.Bool("sandbox", false, "iOS: the APNs sandbox environment (default production)")
	device := fs.String("device", "", "the desktop's id for the phone (default: cli-<platform>-<start of the token>)")
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 || (args[0] != "ios" && args[0] != "android") {
			return usagef("register takes ios or android")
		}
		p := hostclient.RegisterParams{Platform: contract.Platform(args[0]), Token: *token, DeviceID: *device}
		switch {
		case p.Platform == contract.PlatformAndroid && *sandbox:
			return usagef("--sandbox is for iOS")
		case p.Platform == contract.PlatformIOS && *sandbox:
			p.APNSEnvironment = contract.APNSSandbox
		case p.Platform == contract.PlatformIOS:
			p.APNSEnvironment = contract.APNSProduction
		}
		if p.Token == "" {
			// 32 bytes in hex are a valid token for both platforms.
			p.Token = randomHex(contract.KeyBytes)
		}
		if p.DeviceID == "" {
			p.DeviceID = "cli-" + args[0] + "-" + p.Token[:8]
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		var id string
		if err := h.do(ctx, func() (err error) { id, err = h.client.Register(ctx, p); return err }); err != nil {
			return err
		}
		c.print(struct {
			RegistrationID  string                   `json:"registrationId"`
			DeviceID        string                   `json:"deviceId"`
			Platform        contract.Platform        `json:"platform"`
			Token           string                   `json:"token"`
			APNSEnvironment contract.APNSEnvironment `json:"apnsEnvironment,omitempty"`
		}{id, p.DeviceID, p.Platform, p.Token, p.APNSEnvironment},
			fmt.Sprintf("registered %s %s (token %s…) as %s\n", p.Platform, p.DeviceID, p.Token[:8], id))
		return nil
	}
}

func devicesFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		var list []contract.Device
		if err := h.do(ctx, func() (err error) { list, err = h.client.Devices(ctx); return err }); err != nil {
			return err
		}
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 2, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "REGISTRATION\tPLATFORM\tDEVICE\tSTATE")
		for _, d := range list {
			state := "alive"
			if d.Dead {
				state = "dead"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", d.RegistrationID, d.Platform, d.DeviceID, state)
		}
		tw.Flush()
		c.print(contract.DeviceList{Devices: nonNil(list)}, b.String())
		return nil
	}
}

func deleteFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 1 {
			return usagef("delete takes one registration id")
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		if err := h.do(ctx, func() error { return h.client.Delete(ctx, args[0]) }); err != nil {
			return err
		}
		c.print(struct {
			Deleted string `json:"deleted"`
		}{args[0]}, "deleted "+args[0]+"\n")
		return nil
	}
}

func badgeFlags(fs *flag.FlagSet) func(context.Context, *cli, []string) error {
	return func(ctx context.Context, c *cli, args []string) error {
		if len(args) != 2 {
			return usagef("badge takes a registration id and a count")
		}
		// Any integer goes to the gateway, which refuses one out of range.
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return usagef("badge count %q is not an integer", args[1])
		}
		h, err := c.connect()
		if err != nil {
			return err
		}
		var count int64
		if err := h.do(ctx, func() error { count, err = h.client.Badge(ctx, args[0], n); return err }); err != nil {
			return err
		}
		c.print(struct {
			RegistrationID string `json:"registrationId"`
			Count          int64  `json:"count"`
		}{args[0], count}, fmt.Sprintf("badge of %s set to %d\n", args[0], count))
		return nil
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
