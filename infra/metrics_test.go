package infra_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// obsCounters returns the counter names shared/obs declares: the string
// constants of its "Counter names" const block.
func obsCounters(t *testing.T) []string {
	t.Helper()
	path := filepath.Join("..", "shared", "obs", "obs.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), "Counter names") {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a counter that is not a string literal: %#v", path, v)
				}
				name, _ := strconv.Unquote(lit.Value)
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s: no \"Counter names\" const block", path)
	}
	slices.Sort(names)
	return names
}

// Every counter the gateway logs is a Cloud Monitoring metric, and every
// metric is a counter the gateway logs: a counter added to shared/obs
// without its metric would never be charted or alerted on.
func TestEveryCounterIsAMetric(t *testing.T) {
	m := load(t)
	file, e := m.local("counters")
	declared := sortedKeys(m.objectKeys(file, e))
	if want := obsCounters(t); !slices.Equal(declared, want) {
		t.Errorf("local.counters (metrics.tf) = %v,\nshared/obs counters = %v", declared, want)
	}
	metric := m.one("resource", "google_logging_metric", "counter")
	if got := m.attr(metric, "for_each"); got != "local.counters" {
		t.Errorf("google_logging_metric.counter for_each = %s, want local.counters", got)
	}
	for _, path := range [][]string{{"value_extractor"}, {"filter"}} {
		if got := m.attr(metric, path...); !strings.Contains(got, "jsonPayload.${each.key}") {
			t.Errorf("google_logging_metric.counter %s = %s: must read jsonPayload.<counter>", path[0], got)
		}
	}
}

// An alert policy with no documentation pages someone who then does not
// know what it means or what to do first.
func TestEveryAlertPolicyIsDocumentedAndNotifies(t *testing.T) {
	m := load(t)
	policies := m.blocks("resource", "google_monitoring_alert_policy")
	if len(policies) < 3 {
		t.Fatalf("found %d google_monitoring_alert_policy blocks", len(policies))
	}
	for _, p := range policies {
		name := p.Labels[1]
		if m.attr(p, "documentation", "content") == "" || m.attr(p, "documentation", "subject") == "" {
			t.Errorf("alert policy %s has no documentation subject and content", name)
		}
		if got := m.attr(p, "notification_channels"); got != "var.alert_notification_channels" {
			t.Errorf("alert policy %s notification_channels = %q, want var.alert_notification_channels", name, got)
		}
	}
}
