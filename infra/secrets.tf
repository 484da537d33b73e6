# The APNs credentials, the payload key ring and the digest key. The three APNs secrets and their versions already
# exist (imports.tf); the payload key ring's and the digest key's secrets are Terraform's own, their versions an
# operator's (README "Payload keys"). Terraform declares the secrets, the runtime account's access and which version
# each function revision mounts (var.secret_versions), never the values: no key is in state.

locals {
  # Fixed names: the secrets exist already (contract, "Gateway env").
  secret_ids = {
    "apns-key"      = "orca-cloud-push-apns-key"
    "apns-key-id"   = "orca-cloud-push-apns-key-id"
    "apple-team-id" = "orca-cloud-push-apple-team-id"
  }
  # ORCA_PUSH_PAYLOAD_KEYS, the ring that seals the notification text batches store: new with issue 23, so not
  # imported. ORCA_PUSH_DIGEST_KEY, the key of the content digest events keep: new with issue 30. A function refuses
  # to start without either.
  payload_keys_secret_id = "orca-cloud-push-payload-keys"
  digest_key_secret_id   = "orca-cloud-push-digest-key"
  gateway_secret_ids = merge(local.secret_ids, {
    "payload-keys" = local.payload_keys_secret_id
    "digest-key"   = local.digest_key_secret_id
  })
}

resource "google_secret_manager_secret" "gateway" {
  for_each = local.gateway_secret_ids

  secret_id = each.value
  replication {
    auto {}
  }

  # The provider refuses to delete (or replace) them: losing the APNs key is not recoverable by an apply, losing the
  # payload key ring makes every pending alert unopenable, and a new digest key makes every resend of the last five
  # minutes' events read as other content.
  deletion_protection = true
}

resource "google_secret_manager_secret_iam_member" "runtime_accessor" {
  for_each = local.gateway_secret_ids

  secret_id = google_secret_manager_secret.gateway[each.key].id
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.runtime.member
}
