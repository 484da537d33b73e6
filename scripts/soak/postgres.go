package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// cluster is a private PostgreSQL cluster the soak starts for itself, so
// that it may restart it: initdb in a directory of its own, on a free port,
// trusting local connections. As root, which PostgreSQL refuses to run as,
// it runs as the postgres user.
type cluster struct {
	dir, port string
}

// startCluster creates and starts a cluster under parent.
func startCluster(ctx context.Context, parent string) (*cluster, error) {
	p, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: filepath.Join(parent, "pg"), port: strconv.Itoa(p)}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		if err := exec.CommandContext(ctx, "chown", "-R", "postgres:postgres", parent).Run(); err != nil {
			return nil, fmt.Errorf("chown the cluster directory: %w", err)
		}
	}
	if err := c.run(ctx, "initdb", "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		return nil, err
	}
	return c, c.pgctl(ctx, "start", "-w")
}

// url is the cluster's database URL.
func (c *cluster) url() string {
	return "postgres://postgres@" + net.JoinHostPort("127.0.0.1", c.port) + "/postgres?sslmode=disable"
}

// restart stops the cluster at once, as a crash does (immediate mode: no
// checkpoint, recovery at start), and starts it again.
func (c *cluster) restart(ctx context.Context) error {
	if err := c.pgctl(ctx, "stop", "-m", "immediate", "-w"); err != nil {
		return err
	}
	return c.pgctl(ctx, "start", "-w")
}

// stop stops the cluster.
func (c *cluster) stop() { c.pgctl(context.Background(), "stop", "-m", "immediate", "-w") }

func (c *cluster) pgctl(ctx context.Context, args ...string) error {
	args = append(args, "-D", c.dir, "-l", filepath.Join(c.dir, "log"),
		"-o", "-p "+c.port+" -k "+c.dir+" -c listen_addresses=127.0.0.1 -c fsync=off")
	return c.run(ctx, "pg_ctl", args...)
}

// run runs a PostgreSQL program, as the postgres user when this is root.
func (c *cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}
