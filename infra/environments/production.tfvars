project_id      = "onorca-cloud"
region          = "us-central1"
public_hostname = "push.onorca.dev"

# Made by the one-time bootstrap (README.md, "Bootstrap").
deployer_service_account_email = "orca-cloud-push-deployer@onorca-cloud.iam.gserviceaccount.com"
bootstrap_source_object        = "bootstrap/source.zip"

# Sized for 1 M pushes a day, 58 a second at a 5x peak (infra/README.md, "Capacity and cost", which gives 10 M and
# 100 M too). Only send keeps a warm instance: it is on every push's path. host-challenge and host-session are a
# sign-in (once a session), devices a registration, receipts a host's catch-up after it was away: a cold start there
# (about 1-2 s) is a slower first call that the host retries anyway, and a minimum instance each cost ~$10 a month.
# deliver (retries and wake-ups only, inline delivery) and sweep (every minute, which keeps it warm) need none.
capacity_peak_pushes_per_second = 58
function_instances = {
  "host-challenge" = { min = 0, max = 1 }
  "host-session"   = { min = 0, max = 1 }
  "devices"        = { min = 0, max = 2 }
  "send"           = { min = 1, max = 4 }
  "receipts"       = { min = 0, max = 2 }
  "deliver"        = { min = 0, max = 3 }
  "sweep"          = { min = 0, max = 1 }
}

sql_tier = "db-custom-1-3840"
# 14 instances (the maxima above) x 6 connections + 4 = 88 of the tier's 100 (database.tf's precondition;
# infra/README.md, "Capacity and cost").
database_pool_max = 6
sql_disk_type     = "PD_SSD"
sql_disk_size_gb  = 20

# Database traffic at 58 pushes a second is ~2 Mbps: the smallest connector.
vpc_connector_machine_type  = "e2-micro"
vpc_connector_min_instances = 2
vpc_connector_max_instances = 3

# Logs: the load balancer logs 1 % of its requests, and Cloud Run keeps 1 % of its request logs; the counters
# (stdout) are never sampled. Instance-based billing for send (CPU always allocated) cannot be set through the
# pinned provider: infra/README.md, "Capacity and cost", gives the gcloud command.
lb_log_sample_rate      = 0.01
request_logs_kept_ratio = 0.01

# Three queues of 100 dispatches a second and 80 in flight each: 300/s, and 240 in flight, what 3 deliver instances
# of concurrency 80 serve.
tasks_queue_count               = 3
tasks_max_dispatches_per_second = 100
tasks_max_concurrent_dispatches = 80

# Deliver what is due at once within its send request (one function request and no task operation per push).
deliver_inline = true

# Today's Orca phones (README.md, "Which phones?"): they read no summaryMembers, so a coalescing window would hide a
# burst's earlier alerts, and they open only data-only FCM messages. The variables' defaults stay the contract's.
coalesce_ms = 0
fcm_message = "data"

# Keys (infra/README.md, "Payload keys"): pin the versions of the payload key ring and the digest key each revision mounts,
# and name the ring's sealing key during a rotation. Set from the versions that exist in the project, e.g.
#   secret_versions     = { "payload-keys" = "1", "digest-key" = "1" }
#   payload_seal_key_id = "k2"
# Unset, every secret mounts "latest" and the ring's first key seals.
