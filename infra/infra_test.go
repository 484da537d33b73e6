// Package infra_test checks project rules on the Terraform in this folder by parsing it (github.com/hashicorp/hcl/v2):
// what `tofu validate` (schema) and `tofu test` (wiring, mocked provider) cannot say, such as the provider pin,
// documented variables, the imports of resources that already exist, and that the deploy scripts deploy exactly the
// functions Terraform declares. Run by workflows/check-infra.sh; `go test ./infra` works on its own.
package infra_test

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// module is every .tf file of the root module, parsed.
type module struct {
	t      *testing.T
	files  map[string]*hclsyntax.Body
	source map[string][]byte
}

func load(t *testing.T) *module {
	t.Helper()
	dir := os.Getenv("INFRA_DIR") // workflows/check-infra.sh points this at a copy with planted mistakes in its self-test
	if dir == "" {
		dir = "."
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .tf files in %s: %v", dir, err)
	}
	m := &module{t: t, files: map[string]*hclsyntax.Body{}, source: map[string][]byte{}}
	p := hclparse.NewParser()
	for _, path := range paths {
		f, diags := p.ParseHCLFile(path)
		if diags.HasErrors() {
			t.Fatalf("parse %s: %s", path, diags.Error())
		}
		name := filepath.Base(path)
		m.files[name] = f.Body.(*hclsyntax.Body)
		m.source[name] = f.Bytes
	}
	return m
}

type block struct {
	file string
	*hclsyntax.Block
}

// blocks returns the top-level blocks of a type whose labels start with labels, in every file (or only in one).
func (m *module) blocks(typ string, labels ...string) []block {
	var out []block
	for _, name := range sortedKeys(m.files) {
		for _, b := range m.files[name].Blocks {
			if b.Type == typ && len(b.Labels) >= len(labels) && slices.Equal(b.Labels[:len(labels)], labels) {
				out = append(out, block{name, b})
			}
		}
	}
	return out
}

func (m *module) one(typ string, labels ...string) block {
	m.t.Helper()
	bs := m.blocks(typ, labels...)
	if len(bs) != 1 {
		m.t.Fatalf("want exactly one %s %q, found %d", typ, labels, len(bs))
	}
	return bs[0]
}

// text is the source text of an expression, whitespace-collapsed.
func (m *module) text(file string, e hclsyntax.Expression) string {
	r := e.Range()
	return strings.Join(strings.Fields(string(m.source[file][r.Start.Byte:r.End.Byte])), " ")
}

// attr is the source text of a block's attribute ("" when absent); path descends into nested blocks.
func (m *module) attr(b block, path ...string) string {
	body := b.Body
	for _, name := range path[:len(path)-1] {
		var next *hclsyntax.Body
		for _, nb := range body.Blocks {
			if nb.Type == name {
				next = nb.Body
				break
			}
		}
		if next == nil {
			return ""
		}
		body = next
	}
	a, ok := body.Attributes[path[len(path)-1]]
	if !ok {
		return ""
	}
	return m.text(b.file, a.Expr)
}

// local finds the expression of a local value.
func (m *module) local(name string) (string, hclsyntax.Expression) {
	m.t.Helper()
	for _, b := range m.blocks("locals") {
		if a, ok := b.Body.Attributes[name]; ok {
			return b.file, a.Expr
		}
	}
	m.t.Fatalf("no local %q", name)
	return "", nil
}

// objectKeys returns key => value source text of an object-constructor local.
func (m *module) objectKeys(file string, e hclsyntax.Expression) map[string]string {
	m.t.Helper()
	obj, ok := e.(*hclsyntax.ObjectConsExpr)
	if !ok {
		m.t.Fatalf("%s: want an object literal, got %s", file, m.text(file, e))
	}
	out := map[string]string{}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() {
			m.t.Fatalf("%s: key %s is not a literal", file, m.text(file, item.KeyExpr))
		}
		out[k.AsString()] = m.text(file, item.ValueExpr)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The seven functions of design.md and their functions-framework entry points.
var wantFunctions = map[string]string{
	"host-challenge": "HostChallenge", "host-session": "HostSession", "devices": "Devices", "send": "Send",
	"receipts": "Receipts", "deliver": "Deliver", "sweep": "Sweep",
}

func TestProviderPinnedAndTerraformVersion(t *testing.T) {
	m := load(t)
	tf := m.one("terraform")
	if got := m.attr(tf, "required_version"); got != `">= 1.6"` {
		t.Errorf("required_version = %s, want \">= 1.6\" (import blocks with variables; OpenTofu too)", got)
	}
	rp := m.attr(tf, "required_providers", "google")
	if !strings.Contains(rp, `source = "hashicorp/google"`) || !strings.Contains(rp, `version = "~> 6.50"`) {
		t.Errorf("required_providers.google = %s, want source hashicorp/google, version \"~> 6.50\" (the schema infra-check validates against)", rp)
	}
}

func TestEveryVariableHasDescriptionAndType(t *testing.T) {
	m := load(t)
	vars := m.blocks("variable")
	if len(vars) == 0 {
		t.Fatal("no variables")
	}
	for _, v := range vars {
		if m.attr(v, "description") == "" || m.attr(v, "type") == "" {
			t.Errorf("variable %q (%s) needs both description and type", v.Labels[0], v.file)
		}
	}
}

func TestFunctionsMatchDesignAndDeployScripts(t *testing.T) {
	m := load(t)
	file, e := m.local("functions")
	declared := m.objectKeys(file, e)
	entry := regexp.MustCompile(`entry_point = "(\w+)"`)
	got := map[string]string{}
	for k, v := range declared {
		if mm := entry.FindStringSubmatch(v); mm != nil {
			got[k] = mm[1]
		}
	}
	if !maps.Equal(got, wantFunctions) {
		t.Errorf("local.functions entry points = %v, want %v", got, wantFunctions)
	}
	for k, v := range declared {
		wantPublic := k != "deliver" && k != "sweep"
		if strings.Contains(v, "public = true") != wantPublic {
			t.Errorf("local.functions[%q] = %s: public must be %v", k, v, wantPublic)
		}
	}

	// workflows/functions.tsv: what the deploy scripts deploy and probe.
	f, err := os.Open(filepath.Join("..", "workflows", "functions.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	scripts := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 3 {
			t.Fatalf("functions.tsv: bad line %q", sc.Text())
		}
		scripts[fields[0]] = fields[1]
		if (fields[2] == "public") != (fields[0] != "deliver" && fields[0] != "sweep") {
			t.Errorf("functions.tsv: %s is marked %s", fields[0], fields[2])
		}
	}
	if !maps.Equal(scripts, wantFunctions) {
		t.Errorf("workflows/functions.tsv = %v, want the functions Terraform declares %v", scripts, wantFunctions)
	}
}

func TestFunctionResourceRules(t *testing.T) {
	m := load(t)
	fns := m.blocks("resource", "google_cloudfunctions2_function")
	if len(fns) != 1 {
		t.Fatalf("want one google_cloudfunctions2_function (for_each over local.functions), found %d", len(fns))
	}
	fn := fns[0]
	checks := []struct{ path, want string }{
		{"for_each", "local.functions"},
		{"build_config.runtime", `"go126"`},
		{"build_config.entry_point", "each.value.entry_point"},
		{"service_config.service_account_email", "local.runtime_sa_email"},
		{"service_config.environment_variables", "merge(local.gateway_env, local.gateway_seal_env)"},
		{"service_config.max_instance_request_concurrency", "var.request_concurrency"},
	}
	for _, c := range checks {
		if got := m.attr(fn, strings.Split(c.path, ".")...); got != c.want {
			t.Errorf("google_cloudfunctions2_function.%s = %q, want %q", c.path, got, c.want)
		}
	}
	if got := m.attr(fn, "service_config", "ingress_settings"); got != `each.value.public ? "ALLOW_INTERNAL_AND_GCLB" : "ALLOW_INTERNAL_ONLY"` {
		t.Errorf("ingress_settings = %s: public functions behind the load balancer only, private ones internal only", got)
	}
	// The runtime service account is the existing orca-cloud-push account.
	if _, e := m.local("runtime_sa_email"); m.text(fileOfLocal(m, "runtime_sa_email"), e) != "google_service_account.runtime.email" {
		t.Errorf("local.runtime_sa_email must be google_service_account.runtime.email")
	}
	if got := m.attr(m.one("resource", "google_service_account", "runtime"), "account_id"); got != "var.runtime_service_account_id" {
		t.Errorf("google_service_account.runtime.account_id = %s", got)
	}
	if got := m.attr(m.one("variable", "runtime_service_account_id"), "default"); got != `"orca-cloud-push"` {
		t.Errorf("runtime_service_account_id default = %s, want \"orca-cloud-push\"", got)
	}
	// Secrets come from the dynamic block over local.gateway_secret_env.
	var secretBlock *hclsyntax.Block
	for _, b := range fn.Body.Blocks {
		if b.Type == "service_config" {
			for _, d := range b.Body.Blocks {
				if d.Type == "dynamic" && len(d.Labels) == 1 && d.Labels[0] == "secret_environment_variables" {
					secretBlock = d
				}
			}
		}
	}
	if secretBlock == nil {
		t.Fatal("service_config has no dynamic secret_environment_variables block")
	}
	if got := m.text(fn.file, secretBlock.Body.Attributes["for_each"].Expr); got != "local.gateway_secret_env" {
		t.Errorf("secret_environment_variables for_each = %s, want local.gateway_secret_env", got)
	}
}

func fileOfLocal(m *module, name string) string {
	f, _ := m.local(name)
	return f
}

// Every env var the gateway reads in production (contract "Gateway env" plus the Cloud SQL and Cloud Tasks ones).
func TestEveryGatewayEnvVarIsSet(t *testing.T) {
	m := load(t)
	file, e := m.local("gateway_env")
	env := m.objectKeys(file, e)
	sfile, se := m.local("gateway_secret_env")
	secrets := m.objectKeys(sfile, se)
	want := []string{
		"ORCA_PUSH_PUBLIC_URL", "ORCA_PUSH_DATABASE_URL", "ORCA_PUSH_CLOUDSQL_INSTANCE", "ORCA_PUSH_DATABASE_POOL_MAX",
		"ORCA_PUSH_APNS_TOPIC", "ORCA_PUSH_FCM_PROJECT_ID", "ORCA_PUSH_COALESCE_MS", "ORCA_PUSH_TRUSTED_PROXY_HOPS",
		"ORCA_PUSH_TASKS_QUEUE", "ORCA_PUSH_DELIVER_URL", "ORCA_PUSH_TASKS_SERVICE_ACCOUNT", "ORCA_PUSH_TASKS_AUDIENCE",
		"ORCA_PUSH_FCM_MESSAGE", "ORCA_PUSH_DELIVER_INLINE",
	}
	for _, k := range want {
		if _, ok := env[k]; !ok {
			t.Errorf("local.gateway_env lacks %s", k)
		}
	}
	for _, k := range []string{"ORCA_PUSH_APNS_KEY", "ORCA_PUSH_APNS_KEY_ID", "ORCA_PUSH_APPLE_TEAM_ID", "ORCA_PUSH_PAYLOAD_KEYS",
		"ORCA_PUSH_DIGEST_KEY"} {
		if _, ok := secrets[k]; !ok {
			t.Errorf("local.gateway_secret_env lacks %s", k)
		}
		if _, ok := env[k]; ok {
			t.Errorf("%s is a secret: it must not be a plain env var", k)
		}
	}
	for _, k := range []string{"PORT", "ORCA_PUSH_DATA_DIR"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s must not be set in production (PORT is the platform's; DATA_DIR means SQLite)", k)
		}
	}
}

func TestExistingResourcesAreImported(t *testing.T) {
	m := load(t)
	imported := map[string]bool{}
	for _, b := range m.blocks("import") {
		if b.file != "imports.tf" {
			t.Errorf("import block in %s: keep them in imports.tf (tofu test runs without that file)", b.file)
		}
		imported[m.attr(b, "to")] = true
	}
	for _, to := range []string{
		"google_service_account.runtime",
		"google_project_iam_member.runtime_fcm",
		"google_project_iam_member.runtime_usage",
		`google_secret_manager_secret.gateway["apns-key"]`,
		`google_secret_manager_secret.gateway["apns-key-id"]`,
		`google_secret_manager_secret.gateway["apple-team-id"]`,
		`google_secret_manager_secret_iam_member.runtime_accessor["apns-key"]`,
		`google_secret_manager_secret_iam_member.runtime_accessor["apns-key-id"]`,
		`google_secret_manager_secret_iam_member.runtime_accessor["apple-team-id"]`,
	} {
		if !imported[to] {
			t.Errorf("no import block for %s (it already exists in the project)", to)
		}
	}
	file, e := m.local("secret_ids")
	ids := m.objectKeys(file, e)
	want := map[string]string{
		"apns-key": `"orca-cloud-push-apns-key"`, "apns-key-id": `"orca-cloud-push-apns-key-id"`,
		"apple-team-id": `"orca-cloud-push-apple-team-id"`,
	}
	if !maps.Equal(ids, want) {
		t.Errorf("local.secret_ids = %v, want the existing secrets %v", ids, want)
	}
	fcm := m.one("resource", "google_project_iam_member", "runtime_fcm")
	usage := m.one("resource", "google_project_iam_member", "runtime_usage")
	if m.attr(fcm, "role") != `"roles/firebasecloudmessaging.admin"` || m.attr(usage, "role") != `"roles/serviceusage.serviceUsageConsumer"` {
		t.Error("runtime_fcm / runtime_usage must grant firebasecloudmessaging.admin / serviceusage.serviceUsageConsumer")
	}
}

// allUsers may only invoke the public functions; deliver and sweep stay private.
func TestNoPublicInvokerOnPrivateFunctions(t *testing.T) {
	m := load(t)
	var public []block
	for _, name := range sortedKeys(m.files) {
		for _, b := range m.files[name].Blocks {
			for _, a := range b.Body.Attributes {
				if v := m.text(name, a.Expr); strings.Contains(v, "allUsers") || strings.Contains(v, "allAuthenticatedUsers") {
					public = append(public, block{name, b})
				}
			}
		}
	}
	if len(public) != 1 {
		t.Fatalf("allUsers/allAuthenticatedUsers appears in %d blocks, want only the public invoker", len(public))
	}
	b := public[0]
	if b.Type != "resource" || b.Labels[0] != "google_cloud_run_v2_service_iam_member" || b.Labels[1] != "public_invoker" {
		t.Errorf("allUsers granted in %s %v", b.Type, b.Labels)
	}
	if got := m.attr(b, "for_each"); got != "local.public_functions" {
		t.Errorf("public_invoker for_each = %s, want local.public_functions", got)
	}
	file, e := m.local("public_functions")
	if got := m.text(file, e); got != "{ for k, f in local.functions : k => f if f.public }" {
		t.Errorf("local.public_functions = %s", got)
	}
	inv := m.one("resource", "google_cloud_run_v2_service_iam_member", "private_invoker")
	if got := m.attr(inv, "for_each"); got != "local.private_invokers" {
		t.Errorf("private_invoker for_each = %s", got)
	}
}

// Least privilege and no secrets in state: no basic roles, no authoritative IAM, no password users.
func TestIAMAndDatabaseHygiene(t *testing.T) {
	m := load(t)
	role := regexp.MustCompile(`"roles/([\w.]+)"`)
	for _, name := range sortedKeys(m.files) {
		src := string(m.source[name])
		for _, mm := range role.FindAllStringSubmatch(src, -1) {
			r := mm[1]
			if r == "owner" || r == "editor" || r == "viewer" || r == "iam.securityAdmin" ||
				(strings.HasSuffix(r, ".admin") && r != "firebasecloudmessaging.admin") {
				t.Errorf("%s grants roles/%s: grant the narrow role instead", name, r)
			}
		}
		for _, b := range m.files[name].Blocks {
			if b.Type == "resource" && (strings.HasSuffix(b.Labels[0], "_iam_binding") || strings.HasSuffix(b.Labels[0], "_iam_policy")) {
				t.Errorf("%s: %s is authoritative and would drop grants made elsewhere; use _iam_member", name, b.Labels[0])
			}
		}
		if regexp.MustCompile(`(?m)^\s*(password|password_wo|root_password)\s*=`).MatchString(src) {
			t.Errorf("%s sets a database password: IAM database authentication only", name)
		}
	}
	for _, u := range m.blocks("resource", "google_sql_user") {
		if got := m.attr(u, "type"); got != `"CLOUD_IAM_SERVICE_ACCOUNT"` {
			t.Errorf("google_sql_user.%s type = %s, want \"CLOUD_IAM_SERVICE_ACCOUNT\"", u.Labels[1], got)
		}
	}
	sql := m.one("resource", "google_sql_database_instance", "main")
	if got := m.attr(sql, "settings", "availability_type"); got != `"REGIONAL"` {
		t.Errorf("Cloud SQL availability_type = %s, want \"REGIONAL\" (HA)", got)
	}
	if got := m.attr(sql, "settings", "ip_configuration", "authorized_networks"); got != "" {
		t.Error("Cloud SQL must have no authorized networks (connectors only)")
	}
	src := string(m.source[sql.file])
	if !strings.Contains(src, `name  = "cloudsql.iam_authentication"`) || !strings.Contains(src, `value = "on"`) {
		t.Error("Cloud SQL must set cloudsql.iam_authentication=on")
	}
}

func TestTrustedProxyHopsMatchesLoadBalancer(t *testing.T) {
	m := load(t)
	file, e := m.local("trusted_proxy_hops")
	if got := m.text(file, e); got != "1" {
		t.Errorf("local.trusted_proxy_hops = %s, want 1: the external Application LB appends <client-ip>, <lb-ip>", got)
	}
	if len(m.blocks("resource", "google_compute_global_forwarding_rule")) == 0 {
		t.Error("trusted_proxy_hops = 1 assumes the load balancer exists")
	}
}

// TestProductionServesTodaysPhones: production.tfvars deploys for today's Orca phones (no coalescing window, every
// Android message data-only; README.md, "Which phones?"), while the variables' defaults stay the contract's.
func TestProductionServesTodaysPhones(t *testing.T) {
	m := load(t)
	for name, want := range map[string]string{"coalesce_ms": "3000", "fcm_message": `"notification"`} {
		if got := m.attr(m.one("variable", name), "default"); got != want {
			t.Errorf("variable %s default = %s, want the contract's %s", name, got, want)
		}
	}
	dir := os.Getenv("INFRA_DIR")
	if dir == "" {
		dir = "."
	}
	path := filepath.Join(dir, "environments", "production.tfvars")
	f, diags := hclparse.NewParser().ParseHCLFile(path)
	if diags.HasErrors() {
		t.Fatalf("parse %s: %s", path, diags.Error())
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	for name, want := range map[string]string{"coalesce_ms": "0", "fcm_message": `"data"`} {
		a, ok := attrs[name]
		if !ok {
			t.Errorf("%s does not set %s (today's phones want %s)", path, name, want)
			continue
		}
		if got := strings.TrimSpace(string(a.Expr.Range().SliceBytes(f.Bytes))); got != want {
			t.Errorf("%s: %s = %s, want %s (today's phones)", path, name, got, want)
		}
	}
}
