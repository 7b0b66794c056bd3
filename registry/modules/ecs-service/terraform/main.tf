data "aws_partition" "current" {}

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

locals {
  partition  = data.aws_partition.current.partition
  dns_suffix = data.aws_partition.current.dns_suffix
  region     = data.aws_region.current.name
  account_id = data.aws_caller_identity.current.account_id
  tags       = merge(var.tags, { Name = var.name })

  # IAM role name prefixes are limited to 38 characters.
  role_prefix = substr(var.name, 0, 26)

  # Only an ECR image needs ECR permissions, and then only on its own
  # repository: ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO[:TAG|@DIGEST].
  ecr_image          = try(regex("^([0-9]{12})[.]dkr[.]ecr[.]([a-z0-9-]+)[.]amazonaws[.]com(?:[.]cn)?/([a-z0-9._/-]+)", var.image), null)
  ecr_repository_arn = local.ecr_image == null ? null : "arn:${local.partition}:ecr:${local.ecr_image[1]}:${local.ecr_image[0]}:repository/${local.ecr_image[2]}"

  grants_bucket = var.bucket_arn != ""
  grants_table  = var.table_arn != ""

  # SSE-KMS objects and CMK-encrypted items are only usable with the key, and
  # only through the services that hold the data.
  kms_via_services = concat(
    local.grants_bucket ? ["s3.${local.region}.${local.dns_suffix}"] : [],
    local.grants_table ? ["dynamodb.${local.region}.${local.dns_suffix}"] : [],
  )

  # The application finds its bucket and table by name; explicit
  # environment_variables win over these.
  wired_environment = {
    for k, v in {
      BUCKET_NAME = local.grants_bucket ? split(":::", var.bucket_arn)[1] : ""
      TABLE_NAME  = local.grants_table ? split(":table/", var.table_arn)[1] : ""
    } : k => v if v != ""
  }
  environment = merge(local.wired_environment, var.environment_variables)
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/ecs/${var.name}"
  retention_in_days = var.log_retention_days
  kms_key_id        = var.kms_key_arn != "" ? var.kms_key_arn : null
  tags              = local.tags
}

# Execution role: used by the ECS agent to pull the image and ship logs,
# never by the application.
data "aws_iam_policy_document" "execution_assume" {
  statement {
    sid     = "EcsTasksAssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "execution" {
  name_prefix        = "${local.role_prefix}-exec-"
  description        = "ECS task execution role of service ${var.name}."
  assume_role_policy = data.aws_iam_policy_document.execution_assume.json
  tags               = local.tags
}

data "aws_iam_policy_document" "execution" {
  statement {
    sid       = "WriteLogs"
    effect    = "Allow"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = [aws_cloudwatch_log_group.this.arn, "${aws_cloudwatch_log_group.this.arn}:*"]
  }

  dynamic "statement" {
    for_each = local.ecr_repository_arn == null ? [] : [local.ecr_repository_arn]
    content {
      sid       = "PullImage"
      effect    = "Allow"
      actions   = ["ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.ecr_repository_arn == null ? [] : [local.ecr_repository_arn]
    content {
      sid     = "AuthenticateToEcr"
      effect  = "Allow"
      actions = ["ecr:GetAuthorizationToken"]
      # GetAuthorizationToken supports no resource-level permissions: "*" is
      # the only resource it accepts, and the token alone grants no pull.
      resources = ["*"]
    }
  }
}

resource "aws_iam_role_policy" "execution" {
  name   = "pull-image-write-logs"
  role   = aws_iam_role.execution.id
  policy = data.aws_iam_policy_document.execution.json
}

# Task role: the application's own identity.
data "aws_iam_policy_document" "task_assume" {
  statement {
    sid     = "EcsTasksAssumeRole"
    effect  = "Allow"
    actions = ["sts:AssumeRole"]

    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }

    # Confused-deputy protection: only ECS acting for this account and
    # region may hand the role to a task.
    condition {
      test     = "StringEquals"
      variable = "aws:SourceAccount"
      values   = [local.account_id]
    }

    condition {
      test     = "ArnLike"
      variable = "aws:SourceArn"
      values   = ["arn:${local.partition}:ecs:${local.region}:${local.account_id}:*"]
    }
  }
}

resource "aws_iam_role" "task" {
  name_prefix        = "${local.role_prefix}-task-"
  description        = "Task role of ECS service ${var.name}."
  assume_role_policy = data.aws_iam_policy_document.task_assume.json
  tags               = local.tags
}

data "aws_iam_policy_document" "task" {
  dynamic "statement" {
    for_each = local.grants_bucket ? [var.bucket_arn] : []
    content {
      sid       = "ListBucket"
      effect    = "Allow"
      actions   = ["s3:GetBucketLocation", "s3:ListBucket"]
      resources = [statement.value]
    }
  }

  dynamic "statement" {
    for_each = local.grants_bucket ? [var.bucket_arn] : []
    content {
      sid       = "ReadWriteObjects"
      effect    = "Allow"
      actions   = ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
      resources = ["${statement.value}/*"]
    }
  }

  dynamic "statement" {
    for_each = local.grants_table ? [var.table_arn] : []
    content {
      sid    = "ReadWriteItems"
      effect = "Allow"
      actions = [
        "dynamodb:BatchGetItem",
        "dynamodb:BatchWriteItem",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DeleteItem",
        "dynamodb:DescribeTable",
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:Scan",
        "dynamodb:UpdateItem",
      ]
      resources = [statement.value, "${statement.value}/index/*"]
    }
  }

  dynamic "statement" {
    for_each = var.kms_key_arn != "" && length(local.kms_via_services) > 0 ? [var.kms_key_arn] : []
    content {
      sid       = "UseDataKeyThroughDataServices"
      effect    = "Allow"
      actions   = ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"]
      resources = [statement.value]

      condition {
        test     = "StringEquals"
        variable = "kms:ViaService"
        values   = local.kms_via_services
      }
    }
  }
}

# IAM rejects a policy without statements, so the policy exists only when
# something is granted; bucket_arn and table_arn must therefore be known at
# plan time (s3-bucket and dynamodb-table export them so).
resource "aws_iam_role_policy" "task" {
  count = local.grants_bucket || local.grants_table ? 1 : 0

  name   = "data-access"
  role   = aws_iam_role.task.id
  policy = data.aws_iam_policy_document.task.json
}

resource "aws_ecs_task_definition" "this" {
  family                   = var.name
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = tostring(var.cpu)
  memory                   = tostring(var.memory)
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = aws_iam_role.task.arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([
    {
      name      = var.name
      image     = var.image
      essential = true
      portMappings = [
        {
          containerPort = var.container_port
          protocol      = "tcp"
        },
      ]
      environment = [for k, v in local.environment : { name = k, value = v }]
      logConfiguration = {
        logDriver = "awslogs"
        options = {
          "awslogs-group"         = aws_cloudwatch_log_group.this.name
          "awslogs-region"        = local.region
          "awslogs-stream-prefix" = "ecs"
        }
      }
    },
  ])

  tags = local.tags
}

resource "aws_ecs_service" "this" {
  name                               = var.name
  cluster                            = var.cluster_arn
  task_definition                    = aws_ecs_task_definition.this.arn
  desired_count                      = var.desired_count
  launch_type                        = "FARGATE"
  platform_version                   = "LATEST"
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200
  enable_ecs_managed_tags            = true
  propagate_tags                     = "SERVICE"

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = var.security_group_ids
    assign_public_ip = var.assign_public_ip
  }

  # A deployment whose tasks never become healthy is stopped and rolled back
  # to the last one that worked, instead of replacing tasks forever.
  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  tags = local.tags

  # Tasks started before their roles can act fail to pull, log or reach data.
  depends_on = [
    aws_iam_role_policy.execution,
    aws_iam_role_policy.task,
  ]
}
