project_id      = "onorca-cloud"
region          = "us-central1"
public_hostname = "push.onorca.dev"

# Made by the one-time bootstrap (README.md, "Bootstrap").
deployer_service_account_email = "orca-cloud-push-deployer@onorca-cloud.iam.gserviceaccount.com"
bootstrap_source_object        = "bootstrap/source.zip"

public_min_instances  = 1
public_max_instances  = 2
deliver_max_instances = 3

sql_tier = "db-custom-1-3840"
# 14 instances (5 public functions x 2, deliver 3, sweep 1) x 6 connections + 4 = 88 of the tier's 100
# (database.tf's precondition; infra/README.md, "Capacity and cost").
database_pool_max = 6

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
