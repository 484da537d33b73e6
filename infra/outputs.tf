output "load_balancer_ip" {
  description = "The static IP push.onorca.dev must resolve to (A record, added in stablyai/orca-cloud)."
  value       = google_compute_global_address.lb.address
}

output "function_urls" {
  description = "Cloud Run URL of each function (deterministic form)."
  value       = local.function_urls
}

output "tasks_queues" {
  description = "Full paths of the Cloud Tasks delivery queues (ORCA_PUSH_TASKS_QUEUE, comma-separated)."
  value       = local.tasks_queue_ids
}

output "sql_connection_name" {
  description = "project:region:instance of the Cloud SQL instance (ORCA_PUSH_CLOUDSQL_INSTANCE)."
  value       = google_sql_database_instance.main.connection_name
}

output "github_actions_variables" {
  description = "Repository (or production environment) variables the deploy workflow reads, besides ORCA_CLOUD_OPERATIONS_ENABLED and the bootstrap's ORCA_PUSH_WIF_PROVIDER / ORCA_PUSH_DEPLOYER_SA."
  value = {
    ORCA_PUSH_GCP_PROJECT     = var.project_id
    ORCA_PUSH_GCP_REGION      = var.region
    ORCA_PUSH_NAME_PREFIX     = var.name_prefix
    ORCA_PUSH_DEPLOY_BUCKET   = google_storage_bucket.deploy.name
    ORCA_PUSH_RUNTIME_SA      = google_service_account.runtime.email
    ORCA_PUSH_SQL_INSTANCE    = google_sql_database_instance.main.connection_name
    ORCA_PUSH_PROBE_WORKFLOW  = google_workflows_workflow.probe.name
    ORCA_PUSH_FCM_PROJECT     = var.fcm_project_id
    ORCA_PUSH_DEPLOYER_SA     = var.deployer_service_account_email
    ORCA_PUSH_DATABASE_NAME   = google_sql_database.orca_push.name
    ORCA_PUSH_PUBLIC_HOSTNAME = var.public_hostname
  }
}
