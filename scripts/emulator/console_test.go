package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"
)

// skipBrowserVar allows the browser tests to skip when no Chromium is
// installed; without it a missing Chromium fails them (scripts/test installs
// Debian's chromium).
const skipBrowserVar = "ORCA_PUSH_TEST_SKIP_BROWSER"

// mustBrowser starts a headless Chromium with a fresh profile, flags that
// keep it off the network on its own, and returns its chromedp context.
func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv(skipBrowserVar) == "1" {
			t.Skipf("chromium is not installed and %s=1: skipping the browser test", skipBrowserVar)
		}
		t.Fatalf("chromium is not installed: apt-get install -y chromium (scripts/test does), or set %s=1 to skip", skipBrowserVar)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1100),
	)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// consoleRun drives the console step by step, saving a screenshot after each
// step under the test's artifact directory (kept with go test -artifacts).
type consoleRun struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	n    int
	last string
}

// step runs the actions within 30 s and saves a screenshot, also when the
// step failed.
func (c *consoleRun) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second) // a process boundary: the page polls the emulator
	defer cancel()
	err := chromedp.Do(ctx, actions...)
	c.n++
	c.last = filepath.Join(c.dir, fmt.Sprintf("%02d-%s.png", c.n, name))
	if shot, serr := chromedp.Run(c.ctx, chromedp.FullScreenshot(100)); serr == nil {
		os.WriteFile(c.last, shot, 0o600)
	}
	if err != nil {
		c.t.Fatalf("step %s: %v (screenshot %s)", name, err, c.last)
	}
}

// until waits until the JavaScript predicate holds.
func until(predicate string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](predicate, chromedp.WithPollingTimeout(25*time.Second))
}

// sendForm fills the compose form and sends, waiting for the answer.
func sendForm(kind, title, id, to string, sound bool, sent int) chromedp.Action[chromedp.Void] {
	// SetValue cannot set "" (the empty argument reaches the page as
	// undefined), so every value goes through one evaluation.
	set := fmt.Sprintf(`(() => { const f = {kind: %q, title: %q, nid: %q, to: %q};
		for (const [id, v] of Object.entries(f)) document.getElementById(id).value = v;
		document.getElementById("sound").checked = %t;
		return Object.entries(f).every(([id, v]) => document.getElementById(id).value === v); })()`, kind, title, id, to, sound)
	return chromedp.Steps(
		until(set),
		chromedp.Click(chromedp.ID("send")),
		until(fmt.Sprintf(`document.querySelector("#results").dataset.sent === "%d"`, sent)),
	)
}

// parsed is what the page's parse() reads of an inbox entry.
type parsed struct {
	Kind   string `json:"kind"`
	Title  string `json:"title"`
	Silent bool   `json:"silent"`
	Sealed bool   `json:"sealed"`
	ID     string `json:"id"`
}

// Banner predicates, evaluated in the page.
const pageHelpers = `
window.phone = (platform) => document.querySelector('.phone[data-platform="' + platform + '"]');
window.titles = (p) => [...p.querySelectorAll('.banner:not(.failed) .title')].map((e) => e.textContent);
window.livePhone = (platform) => [...document.querySelectorAll('.phone[data-platform="' + platform + '"]')].find((p) => p.dataset.dead === "false");
window.iconBadge = (p) => { const b = p.querySelector(".app-badge"); return b ? b.textContent : ""; };
window.fates = (id) => [...document.querySelectorAll('#fates > li[data-id="' + id + '"][data-kind="alert"] li[data-status]')]
  .map((e) => e.dataset.status + (e.textContent.includes(" · Unregistered") ? ":Unregistered" : "")).sort().join();
`

// TestConsole drives the console in a real headless Chromium against the
// emulator process on the manual clock: two phones, an alert seen on both,
// its dismissal removing it, an uninstalled app's 410 and the phone marked
// dead, a burst shown as one summary after "+3 s", and a silent alert
// marked; pending tasks count down as the clock moves; the receipts panel
// follows each send on each phone, to a phone deleted before it got it; a
// phone's app icon shows no badge until its app is opened (badge 0, opting
// it in), then each alert's count, a summary raising it by its members.
func TestConsole(t *testing.T) {
	ctx := mustBrowser(t)
	p := startEmulator(t, "ORCA_PUSH_MANUAL_CLOCK=1")
	c := &consoleRun{t: t, ctx: ctx, dir: t.ArtifactDir()}
	defer func() { t.Logf("last screenshot: %s", c.last) }()

	c.step("console",
		chromedp.Navigate(p.origin+"/"),
		chromedp.WaitVisible(chromedp.ID("add-ios")),
		until(`location.pathname === "/_emulator/" && !document.querySelector("#clock-panel").hidden`),
		chromedp.Evaluate[chromedp.Void](pageHelpers),
	)
	// How the page reads provider requests it cannot get from this gateway
	// yet: sealed notifications (an FCM data-only message, an APNs alert with
	// an e2e1: pane key) and an FCM dismissal.
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]parsed](`[
		{provider: "fcm", status: 200, sealed: true, body: {message: {token: "t", data: {title: "New activity", message: "", sound: "", notificationId: "s1"}}}},
		{provider: "apns", status: 200, path: "/3/device/t", headers: {}, body: {aps: {alert: {title: "Orca", body: "Open to read"}, sound: "default"}, orca: {paneKey: "e2e1:abc", notificationId: "s2"}}},
		{provider: "fcm", status: 200, body: {message: {token: "t", data: {kind: "dismiss", notificationId: "s1"}}}},
		{provider: "apns", status: 200, path: "/3/device/t", headers: {}, body: {aps: {"content-available": 1}, orca: {kind: "dismiss", notificationId: "s2"}}},
	].map(parse).map((x) => ({kind: x.kind, title: x.title, silent: x.silent, sealed: x.sealed, id: x.id}))`))
	want := []parsed{{"alert", "New activity", true, true, "s1"}, {"alert", "Orca", false, true, "s2"},
		{"dismiss", "", false, false, "s1"}, {"dismiss", "", true, false, "s2"}}
	if err != nil || !cmp.Equal(got, want) {
		t.Fatalf("parse = %+v, %v; want %+v", got, err, want)
	}
	c.step("two-phones",
		chromedp.Click(chromedp.ID("add-ios")),
		until(`document.querySelectorAll('.phone[data-platform="ios"]').length === 1`),
		chromedp.Click(chromedp.ID("add-android")),
		until(`document.querySelectorAll(".phone").length === 2 &&
			[...document.querySelectorAll(".phone")].every((p) => p.dataset.dead === "false" && p.dataset.registration)`),
	)
	c.step("alert-pending",
		sendForm("alert", "Build finished", "n-build", "*", true, 1),
		until(`document.querySelectorAll('#results li[data-status="queued"]').length === 2`),
		until(`[...document.querySelectorAll("#tasks .countdown")].map((e) => e.textContent).join() === "due in 3.0 s,due in 3.0 s"`),
		chromedp.Click(chromedp.CSS(`button[data-advance="1000"]`)),
		until(`[...document.querySelectorAll("#tasks .countdown")].map((e) => e.textContent).join() === "due in 2.0 s,due in 2.0 s"`),
		until(`fates("n-build") === "queued,queued"`),
	)
	c.step("alert-on-both",
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`["ios", "android"].every((p) => titles(phone(p)).includes("Build finished"))`),
		until(`fates("n-build") === "sent,sent"`),
		// Out 1 s after the due time, 4 s after acceptance.
		until(`document.querySelector('[data-counter="delivery_late_1s"]')?.textContent === "2" &&
			document.querySelector('[data-counter="alert_latency_5s"]')?.textContent === "2"`),
	)
	c.step("dismissal",
		sendForm("dismiss", "Build finished", "n-build", "*", true, 2),
		chromedp.Click(chromedp.ID("run-due")),
		until(`["ios", "android"].every((p) => !titles(phone(p)).includes("Build finished")) &&
			document.querySelector('[data-counter="dismissals"]').textContent === "2"`),
	)
	c.step("uninstall",
		chromedp.Click(chromedp.CSS(`.phone[data-platform="ios"] button.uninstall`)),
		until(`phone("ios").querySelector(".badge.fault") !== null`),
		sendForm("alert", "After uninstall", "n-gone", "*", true, 3),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`phone("ios").querySelector('.banner.failed[data-status="410"]') !== null &&
			phone("ios").dataset.dead === "true" && titles(phone("android")).includes("After uninstall")`),
		until(`fates("n-gone") === "dead:Unregistered,sent"`),
	)
	reg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`phone("android").dataset.registration`))
	if err != nil {
		t.Fatal(err)
	}
	c.step("burst",
		sendForm("alert", "Burst 1", "", reg, true, 4),
		sendForm("alert", "Burst 2", "", reg, true, 5),
		sendForm("alert", "Burst 3", "", reg, true, 6),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`phone("android").querySelector('.banner.summary[data-count="3"]') !== null &&
			!titles(phone("android")).some((t) => t.startsWith("Burst"))`),
	)
	c.step("silent",
		sendForm("alert", "Quiet one", "n-quiet", reg, false, 7),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`[...phone("android").querySelectorAll(".banner")].some((b) =>
			b.querySelector(".title").textContent === "Quiet one" && b.querySelector(".tag.silent") !== null)`),
	)
	c.step("deleted-while-pending",
		sendForm("alert", "Never shown", "n-never", reg, true, 8),
		until(`fates("n-never") === "queued"`),
		chromedp.Click(chromedp.CSS(`.phone[data-platform="android"] button.delete`)),
		until(`fates("n-never") === "dropped" &&
			document.querySelector('#fates > li[data-id="n-never"] li').textContent.includes("(deleted)")`),
	)
	c.step("no-badge-before-opted-in",
		chromedp.Click(chromedp.ID("add-ios")),
		until(`livePhone("ios") !== undefined && livePhone("ios").dataset.registration`),
	)
	ios, err := chromedp.Run(ctx, chromedp.Evaluate[string](`livePhone("ios").dataset.registration`))
	if err != nil {
		t.Fatal(err)
	}
	// A refresh redraws a phone's screen but keeps its buttons and the
	// compose form's choices: a click pressed before a refresh and released
	// after it still lands, and an open list stays open.
	c.step("buttons-survive-refresh",
		chromedp.Evaluate[chromedp.Void](`livePhone("ios").querySelector("button.open-app").dataset.mark = "kept";
			document.querySelector("#to").options[0].dataset.mark = "kept";
			window.clockBefore = document.querySelector("#clock-now").textContent;`),
		chromedp.Click(chromedp.CSS(`button[data-advance="1000"]`)),
		until(`document.querySelector("#clock-now").textContent !== window.clockBefore`),
		until(`livePhone("ios").querySelector('button.open-app[data-mark="kept"]') !== null &&
			document.querySelector('#to option[data-mark="kept"]') !== null`),
	)
	c.step("badge-unset",
		sendForm("alert", "Not badged", "", ios, true, 9),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`titles(livePhone("ios")).includes("Not badged") && iconBadge(livePhone("ios")) === "" &&
			livePhone("ios").querySelector(".appicon").dataset.badge === ""`),
	)
	c.step("badge-after-open",
		chromedp.Click(chromedp.CSS(`.phone[data-registration="`+ios+`"] button.open-app`)),
		until(`livePhone("ios").querySelector(".appicon").dataset.badge === "0"`),
		sendForm("alert", "Badged", "", ios, true, 10),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`titles(livePhone("ios")).includes("Badged") && iconBadge(livePhone("ios")) === "1"`),
	)
	c.step("badge-summary",
		sendForm("alert", "Badged 2", "", ios, true, 11),
		sendForm("alert", "Badged 3", "", ios, true, 12),
		chromedp.Click(chromedp.CSS(`button[data-advance="3000"]`)),
		until(`livePhone("ios").querySelector('.banner.summary[data-count="2"]') !== null && iconBadge(livePhone("ios")) === "3"`),
		chromedp.Click(chromedp.CSS(`.phone[data-registration="`+ios+`"] button.open-app`)),
		until(`iconBadge(livePhone("ios")) === "" && livePhone("ios").querySelector(".appicon").dataset.badge === "0"`),
	)
}
