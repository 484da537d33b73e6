package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"onorca.dev/push/shared/store/storetest"
)

func TestRunTwice(t *testing.T) {
	for _, d := range storetest.Dialects(t) {
		t.Run(d.Name, func(t *testing.T) {
			o := d.Options(t)
			env := map[string]string{"ORCA_PUSH_DATABASE_URL": o.DatabaseURL, "ORCA_PUSH_DATA_DIR": o.DataDir}
			for range 2 {
				var out bytes.Buffer
				if err := run(context.Background(), func(k string) string { return env[k] }, &out); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "schema is current") {
					t.Fatalf("output = %q", out.String())
				}
			}
		})
	}
}
