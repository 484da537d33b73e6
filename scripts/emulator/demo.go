package main

import "net/http"

// demoPage is GET /_emulator/: a page for people that lists the inbox as
// phone banners and the pending tasks, reading the control API.
func demoPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(demoHTML))
}

const demoHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>orca-push emulator</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;max-width:46em}
.banner{border:1px solid #ccc;border-radius:12px;padding:.6em .9em;margin:.5em 0;background:#f7f7f9}
.banner b{display:block}.meta{color:#777;font-size:12px}
</style></head><body>
<h1>orca-push emulator</h1>
<p>What the APNs and FCM stand-ins received, newest last. Send with any host client
(<code>shared/hostclient</code>); with the manual clock, move time with <code>POST /_emulator/clock</code>
and run tasks with <code>POST /_emulator/tasks/run-due</code>.</p>
<h2>Inbox</h2><div id="inbox">loading…</div>
<h2>Pending tasks</h2><pre id="tasks">loading…</pre>
<script>
async function refresh(){
  const inbox=(await (await fetch('/_emulator/inbox')).json()).deliveries;
  const el=document.getElementById('inbox'); el.textContent='';
  if(!inbox.length){el.textContent='nothing yet';}
  for(const d of inbox){
    const b=document.createElement('div'); b.className='banner';
    const m=d.body&&(d.body.message||d.body)||{};
    const alert=(m.aps&&m.aps.alert)||m.notification||{};
    const t=document.createElement('b'); t.textContent=alert.title||'(silent: '+((m.orca&&m.orca.kind)||(m.data&&m.data.kind)||'background')+')';
    const p=document.createElement('div'); p.textContent=alert.body||'';
    const meta=document.createElement('div'); meta.className='meta';
    meta.textContent=d.provider+' '+d.host+' → '+d.status+' at '+new Date(d.receivedAt).toISOString();
    b.append(t,p,meta); el.append(b);
  }
  document.getElementById('tasks').textContent=JSON.stringify((await (await fetch('/_emulator/tasks')).json()).tasks,null,1);
}
refresh(); setInterval(refresh,2000);
</script></body></html>`
