# Resources that already exist in the project (contract, "Infra"): adopted on the first apply, no-ops afterwards.
# Kept in a file of their own because OpenTofu 1.12's `tofu test` cannot run a module with import blocks
# (workflows/check-infra.sh tests a copy without this file).
#
# Secret ids are projects/<project>/secrets/<id>; IAM member ids are "<resource> <role> <member>".

locals {
  imported_runtime_sa = "${var.runtime_service_account_id}@${var.project_id}.iam.gserviceaccount.com"
}

import {
  to = google_service_account.runtime
  id = "projects/${var.project_id}/serviceAccounts/${local.imported_runtime_sa}"
}

import {
  to = google_project_iam_member.runtime_fcm
  id = "${var.project_id} roles/firebasecloudmessaging.admin serviceAccount:${local.imported_runtime_sa}"
}

import {
  to = google_project_iam_member.runtime_usage
  id = "${var.project_id} roles/serviceusage.serviceUsageConsumer serviceAccount:${local.imported_runtime_sa}"
}

import {
  to = google_secret_manager_secret.gateway["apns-key"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apns-key"]}"
}

import {
  to = google_secret_manager_secret.gateway["apns-key-id"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apns-key-id"]}"
}

import {
  to = google_secret_manager_secret.gateway["apple-team-id"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apple-team-id"]}"
}

import {
  to = google_secret_manager_secret_iam_member.runtime_accessor["apns-key"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apns-key"]} roles/secretmanager.secretAccessor serviceAccount:${local.imported_runtime_sa}"
}

import {
  to = google_secret_manager_secret_iam_member.runtime_accessor["apns-key-id"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apns-key-id"]} roles/secretmanager.secretAccessor serviceAccount:${local.imported_runtime_sa}"
}

import {
  to = google_secret_manager_secret_iam_member.runtime_accessor["apple-team-id"]
  id = "projects/${var.project_id}/secrets/${local.secret_ids["apple-team-id"]} roles/secretmanager.secretAccessor serviceAccount:${local.imported_runtime_sa}"
}
