# The dedicated HA PostgreSQL instance, its private network path, the orca_push database and the IAM database user.

resource "google_compute_network" "main" {
  name                    = var.name_prefix
  auto_create_subnetworks = false
  depends_on              = [google_project_service.api]
}

# Private services access: the range Cloud SQL takes its private IP from, peered into the network.
resource "google_compute_global_address" "sql_psa" {
  name          = "${var.name_prefix}-sql-psa"
  purpose       = "VPC_PEERING"
  address_type  = "INTERNAL"
  prefix_length = var.network_psa_prefix_length
  network       = google_compute_network.main.id
}

resource "google_service_networking_connection" "sql" {
  network                 = google_compute_network.main.id
  service                 = "servicenetworking.googleapis.com"
  reserved_peering_ranges = [google_compute_global_address.sql_psa.name]
}

# The functions' egress to private ranges (the instance's private IP) goes through this connector.
resource "google_vpc_access_connector" "main" {
  name          = "orca-push-vpc"
  region        = var.region
  network       = google_compute_network.main.name
  ip_cidr_range = var.vpc_connector_cidr
  machine_type  = var.vpc_connector_machine_type
  min_instances = var.vpc_connector_min_instances
  max_instances = var.vpc_connector_max_instances

  lifecycle {
    # Every database byte goes through the connector: ~3.7 KB a push (infra/README.md, "Capacity and cost"), kept
    # under half its maximum throughput at the peak the settings are sized for.
    precondition {
      condition     = var.vpc_connector_min_instances < var.vpc_connector_max_instances
      error_message = "vpc_connector_min_instances must be below vpc_connector_max_instances"
    }
    precondition {
      condition     = local.vpc_connector_peak_mbps <= local.vpc_connector_max_mbps / 2
      error_message = "the VPC connector (${var.vpc_connector_max_instances} x ${var.vpc_connector_machine_type}, ${local.vpc_connector_max_mbps} Mbps) carries under twice the ${local.vpc_connector_peak_mbps} Mbps of ${var.capacity_peak_pushes_per_second} pushes a second: raise vpc_connector_max_instances or take e2-standard-4."
    }
  }
}

locals {
  # Bytes a push moves between a function and PostgreSQL, both ways (2,870 B sent, 1,348 B received, the
  # PostgreSQL protocol's, measured by scripts/emulator's TestPushCostInputs; README "Capacity and cost"), and each connector instance's throughput by machine type
  # (cloud.google.com/vpc/docs/serverless-vpc-access, "Throughput").
  push_database_bytes     = 2870 + 1348
  vpc_connector_peak_mbps = ceil(var.capacity_peak_pushes_per_second * local.push_database_bytes * 8 / 1000000)
  vpc_connector_max_mbps  = var.vpc_connector_max_instances * lookup({ "f1-micro" = 100, "e2-micro" = 100, "e2-standard-4" = 1600 }, var.vpc_connector_machine_type, 0)
}

resource "google_sql_database_instance" "main" {
  name                = "${var.name_prefix}-pg"
  region              = var.region
  database_version    = var.sql_database_version
  deletion_protection = var.sql_deletion_protection

  settings {
    tier                        = var.sql_tier
    edition                     = "ENTERPRISE"
    availability_type           = "REGIONAL" # HA: a standby in a second zone, automatic failover
    deletion_protection_enabled = var.sql_deletion_protection
    disk_autoresize             = true
    # The size sets PD_SSD's IOPS (the WAL and checkpoints of every push); autoresize only ever grows it.
    disk_size = var.sql_disk_size_gb
    disk_type = var.sql_disk_type
    # Only the Cloud SQL connectors (the Go connector in the functions, the Auth Proxy in the deploy workflow) may
    # connect: each presents an ephemeral client certificate and logs in with IAM.
    connector_enforcement = "REQUIRED"

    ip_configuration {
      ipv4_enabled    = var.sql_public_ip_for_rollouts # no authorized_networks: connectors only, see above
      private_network = google_compute_network.main.id
      ssl_mode        = "TRUSTED_CLIENT_CERTIFICATE_REQUIRED"
    }

    database_flags {
      name  = "cloudsql.iam_authentication"
      value = "on"
    }

    backup_configuration {
      enabled                        = true
      point_in_time_recovery_enabled = true
      start_time                     = "09:00"
    }

    maintenance_window {
      day          = 7 # Sunday
      hour         = 10
      update_track = "stable"
    }

    insights_config {
      query_insights_enabled = true
    }
  }

  lifecycle {
    # Every instance of every function may fill its pool at once; with the deploy workflow's migration connection
    # and the connections PostgreSQL reserves for superusers, that must fit the tier's max_connections, or a peak
    # fails sends with "too many clients" (infra/README.md, "Capacity and cost").
    precondition {
      condition     = local.sql_connections_needed <= local.sql_max_connections
      error_message = "instances x database_pool_max (${local.sql_connections_needed} with the migration's and the reserved connections) exceeds ${var.sql_tier}'s max_connections (${local.sql_max_connections}): lower database_pool_max or the instance counts, or take a larger tier."
    }
  }

  depends_on = [google_service_networking_connection.sql]
}

locals {
  # Cloud SQL for PostgreSQL's default max_connections by the tier's memory (cloud.google.com/sql/docs/postgres/quotas,
  # "Maximum concurrent connections"): the shared-core tiers by name, custom tiers (db-custom-CPUS-MB) by their MB.
  sql_tier_memory_mb = (
    var.sql_tier == "db-f1-micro" ? 614 :
    var.sql_tier == "db-g1-small" ? 1740 :
    can(regex("^db-custom-[0-9]+-[0-9]+$", var.sql_tier)) ? tonumber(split("-", var.sql_tier)[3]) : 0
  )
  sql_max_connections = max(0, [for t in [[614, 25], [1740, 50], [3840, 100], [6144, 200], [7680, 400], [15360, 500],
  [30720, 600], [61440, 800], [122880, 1000]] : t[1] if local.sql_tier_memory_mb >= t[0]]...)
  # Connections the gateway may open at once: every function's maximum instances times the pool; plus the
  # migration's one connection and PostgreSQL's 3 superuser_reserved_connections.
  sql_max_instances      = sum([for k, v in var.function_instances : v.max])
  sql_connections_needed = local.sql_max_instances * var.database_pool_max + 1 + 3
}

resource "google_sql_database" "orca_push" {
  name     = "orca_push"
  instance = google_sql_database_instance.main.name
}

# The runtime service account logs in as itself; there is no password user. (The instance's built-in postgres user
# has no password; README.md's bootstrap uses it once to grant the schema.)
resource "google_sql_user" "runtime" {
  name     = local.db_iam_user
  instance = google_sql_database_instance.main.name
  type     = "CLOUD_IAM_SERVICE_ACCOUNT"
}
