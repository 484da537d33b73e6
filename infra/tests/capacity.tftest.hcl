# The settings of infra/README.md, "Capacity and cost", for 1 M, 10 M and 100 M pushes a day, planned with a mocked
# google provider: each must pass every precondition (connections within the tier, queues x rate for an outage's
# retries, deliver slots for the dispatches in flight, send's CPU, the VPC connector's throughput), and a setting one
# step short of each is refused. Run by workflows/check-infra.sh with -var-file=environments/production.tfvars.

mock_provider "google" {
  mock_data "google_project" {
    defaults = {
      number = "123456789012"
    }
  }
}

# 1 M a day (58 a second at the peak): production.tfvars as it is.
run "capacity_1m" {
  command = plan

  assert {
    condition     = local.sql_connections_needed == 88 && local.sql_max_connections == 100 && local.vpc_connector_peak_mbps == 2
    error_message = "1 M a day: 14 instances x 6 + 4 = 88 of db-custom-1-3840's 100 connections, 2 Mbps through the connector"
  }

  assert {
    condition = (
      google_cloudfunctions2_function.fn["send"].service_config[0].min_instance_count == 1 &&
      alltrue([for k in ["host-challenge", "host-session", "devices", "receipts", "deliver", "sweep"] :
      google_cloudfunctions2_function.fn[k].service_config[0].min_instance_count == 0])
    )
    error_message = "production keeps a warm instance for send only"
  }

  assert {
    condition     = google_compute_backend_service.public["send"].log_config[0].sample_rate == 0.01 && google_sql_database_instance.main.settings[0].disk_size == 20
    error_message = "production: the load balancer logs 1 % of requests; the SQL disk is 20 GB"
  }
}

# 10 M a day (580 a second).
run "capacity_10m" {
  command = plan

  variables {
    capacity_peak_pushes_per_second = 580
    function_instances = {
      "host-challenge" = { min = 0, max = 1 }
      "host-session"   = { min = 0, max = 1 }
      "devices"        = { min = 0, max = 2 }
      "send"           = { min = 1, max = 6 }
      "receipts"       = { min = 0, max = 2 }
      "deliver"        = { min = 0, max = 3 }
      "sweep"          = { min = 0, max = 1 }
    }
    sql_tier                        = "db-custom-2-7680"
    database_pool_max               = 10
    sql_disk_size_gb                = 50
    tasks_queue_count               = 3
    tasks_max_dispatches_per_second = 200
    tasks_max_concurrent_dispatches = 80
  }

  assert {
    condition     = local.sql_connections_needed == 164 && local.sql_max_connections == 400 && local.vpc_connector_peak_mbps == 20
    error_message = "10 M a day: 16 instances x 10 + 4 = 164 of db-custom-2-7680's 400 connections, 20 Mbps through the connector"
  }
}

# 100 M a day (5,800 a second).
run "capacity_100m" {
  command = plan

  variables {
    capacity_peak_pushes_per_second = 5800
    function_instances = {
      "host-challenge" = { min = 0, max = 2 }
      "host-session"   = { min = 0, max = 2 }
      "devices"        = { min = 0, max = 4 }
      "send"           = { min = 2, max = 24 }
      "receipts"       = { min = 0, max = 4 }
      "deliver"        = { min = 0, max = 6 }
      "sweep"          = { min = 0, max = 1 }
    }
    sql_tier                        = "db-custom-16-61440"
    database_pool_max               = 12
    sql_disk_size_gb                = 500
    vpc_connector_machine_type      = "e2-standard-4"
    vpc_connector_min_instances     = 2
    vpc_connector_max_instances     = 3
    tasks_queue_count               = 12
    tasks_max_dispatches_per_second = 500
    tasks_max_concurrent_dispatches = 40
  }

  assert {
    condition     = local.sql_connections_needed == 520 && local.sql_max_connections == 800 && local.vpc_connector_peak_mbps == 196
    error_message = "100 M a day: 43 instances x 12 + 4 = 520 of db-custom-16-61440's 800 connections, 196 Mbps through the connector"
  }

  assert {
    condition     = length(google_cloud_tasks_queue.deliver) == 12
    error_message = "100 M a day: twelve queues"
  }
}

# One step short of each limit is refused at plan time.
run "capacity_100m_on_1m_queues_refused" {
  command = plan

  variables {
    capacity_peak_pushes_per_second = 5800
    function_instances = {
      "host-challenge" = { min = 0, max = 1 }
      "host-session"   = { min = 0, max = 1 }
      "devices"        = { min = 0, max = 2 }
      "send"           = { min = 1, max = 4 }
      "receipts"       = { min = 0, max = 2 }
      "deliver"        = { min = 0, max = 3 }
      "sweep"          = { min = 0, max = 1 }
    }
  }

  # 3 x 100/s of queues and 3 e2-micro connector instances for 5,800 pushes a second. (send, which depends on both,
  # is not planned once they fail: its own limit is the next run.)
  expect_failures = [google_cloud_tasks_queue.deliver, google_vpc_access_connector.main]
}

run "capacity_send_cpu_refused" {
  command = plan

  variables {
    capacity_peak_pushes_per_second = 5800
    function_instances = {
      "host-challenge" = { min = 0, max = 1 }
      "host-session"   = { min = 0, max = 1 }
      "devices"        = { min = 0, max = 2 }
      "send"           = { min = 1, max = 4 }
      "receipts"       = { min = 0, max = 2 }
      "deliver"        = { min = 0, max = 3 }
      "sweep"          = { min = 0, max = 1 }
    }
    vpc_connector_machine_type      = "e2-standard-4"
    tasks_queue_count               = 12
    tasks_max_dispatches_per_second = 500
    tasks_max_concurrent_dispatches = 20
  }

  # Everything but send's 4 instances carries 5,800 pushes a second (2.3 ms each needs 23 under 60 %).
  expect_failures = [google_cloudfunctions2_function.fn]
}

run "capacity_deliver_slots_refused" {
  command = plan

  variables {
    tasks_max_concurrent_dispatches = 100
  }

  # 3 queues x 100 in flight against deliver's 3 instances x 80.
  expect_failures = [google_cloud_tasks_queue.deliver]
}

run "function_instances_must_name_the_seven" {
  command = plan

  variables {
    function_instances = {
      "send" = { min = 1, max = 4 }
    }
  }

  expect_failures = [var.function_instances]
}

# The advertised queue list is its own variable: lowering the count is two applies (infra/README.md, "Queues").
run "tasks_queues_advertised_fewer" {
  command = apply

  variables {
    tasks_queues_advertised = 2
  }

  assert {
    condition = (
      length(google_cloud_tasks_queue.deliver) == 3 &&
      google_cloudfunctions2_function.fn["send"].service_config[0].environment_variables.ORCA_PUSH_TASKS_QUEUE == "projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver,projects/onorca-cloud/locations/us-central1/queues/orca-cloud-push-deliver-01"
    )
    error_message = "tasks_queues_advertised = 2: three queues dispatch, the functions are told of the first two"
  }
}

run "tasks_queues_advertised_refused" {
  command = plan

  variables {
    tasks_queues_advertised = 4
  }

  expect_failures = [google_cloud_tasks_queue.deliver]
}
