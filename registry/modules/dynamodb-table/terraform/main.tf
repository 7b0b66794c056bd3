data "aws_partition" "current" {}

data "aws_region" "current" {}

data "aws_caller_identity" "current" {}

locals {
  provisioned = var.billing_mode == "PROVISIONED"
  tags        = merge(var.tags, { Name = var.table_name })

  # Built from the name rather than read from aws_dynamodb_table.arn, which
  # is unknown until apply: consumers that decide count or for_each from
  # this ARN (ecs-service grants access only when it is set) need it at plan
  # time.
  table_arn = "arn:${data.aws_partition.current.partition}:dynamodb:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:table/${aws_dynamodb_table.this.name}"
}

resource "aws_dynamodb_table" "this" {
  name                        = var.table_name
  billing_mode                = var.billing_mode
  read_capacity               = local.provisioned ? var.read_capacity : null
  write_capacity              = local.provisioned ? var.write_capacity : null
  hash_key                    = var.hash_key
  range_key                   = var.range_key != "" ? var.range_key : null
  deletion_protection_enabled = var.deletion_protection_enabled

  attribute {
    name = var.hash_key
    type = var.hash_key_type
  }

  dynamic "attribute" {
    for_each = var.range_key != "" ? [var.range_key] : []
    content {
      name = attribute.value
      type = var.range_key_type
    }
  }

  # enabled = true always: false would mean an AWS-owned key, invisible in
  # the account's KMS and CloudTrail. Without a key ARN DynamoDB uses the
  # AWS-managed key aws/dynamodb.
  server_side_encryption {
    enabled     = true
    kms_key_arn = var.kms_key_arn != "" ? var.kms_key_arn : null
  }

  point_in_time_recovery {
    enabled = var.point_in_time_recovery
  }

  dynamic "ttl" {
    for_each = var.ttl_attribute != "" ? [var.ttl_attribute] : []
    content {
      attribute_name = ttl.value
      enabled        = true
    }
  }

  tags = local.tags
}
