variable "name" {
  type        = string
  description = "Name of the service, its task family, container and log group (/ecs/NAME)."

  validation {
    condition     = can(regex("^[a-zA-Z][a-zA-Z0-9_-]{0,254}$", var.name))
    error_message = "name must start with a letter and hold at most 255 letters, digits, hyphens or underscores."
  }
}

variable "cluster_arn" {
  type        = string
  description = "ARN of the ECS cluster the service runs in."

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:ecs:[a-z0-9-]+:[0-9]{12}:cluster/.+$", var.cluster_arn))
    error_message = "cluster_arn must be an ECS cluster ARN."
  }
}

variable "image" {
  type        = string
  description = "Container image, preferably pinned by digest (REPO@sha256:...). ECR images get pull rights on their repository only."

  validation {
    condition     = length(trimspace(var.image)) > 0
    error_message = "image must not be empty."
  }
}

variable "cpu" {
  type        = number
  description = "Task CPU units (256 = 0.25 vCPU); one of Fargate's sizes."
  default     = 256

  validation {
    condition     = contains([256, 512, 1024, 2048, 4096, 8192, 16384], var.cpu)
    error_message = "cpu must be one of 256, 512, 1024, 2048, 4096, 8192, 16384."
  }
}

variable "memory" {
  type        = number
  description = "Task memory in MiB; must be a size Fargate allows for the chosen cpu."
  default     = 512

  validation {
    condition     = var.memory >= 512 && var.memory <= 122880
    error_message = "memory must be between 512 and 122880 MiB."
  }
}

variable "cpu_architecture" {
  type        = string
  description = "CPU architecture the image is built for: X86_64 or ARM64."
  default     = "X86_64"

  validation {
    condition     = contains(["X86_64", "ARM64"], var.cpu_architecture)
    error_message = "cpu_architecture must be X86_64 or ARM64."
  }
}

variable "container_port" {
  type        = number
  description = "Port the container listens on."
  default     = 8080

  validation {
    condition     = var.container_port >= 1 && var.container_port <= 65535 && floor(var.container_port) == var.container_port
    error_message = "container_port must be a whole number between 1 and 65535."
  }
}

variable "desired_count" {
  type        = number
  description = "Number of tasks to keep running. Two or more, in subnets of different Availability Zones, survive the loss of a zone."
  default     = 2

  validation {
    condition     = var.desired_count >= 0 && floor(var.desired_count) == var.desired_count
    error_message = "desired_count must be a whole number, 0 or more."
  }
}

variable "subnet_ids" {
  type        = list(string)
  description = "Subnets the tasks run in; give subnets of at least two Availability Zones."

  validation {
    condition     = length(var.subnet_ids) > 0
    error_message = "subnet_ids must name at least one subnet."
  }
}

variable "security_group_ids" {
  type        = list(string)
  description = "Security groups attached to the tasks. Required, so the VPC's default group is never used by accident."

  validation {
    condition     = length(var.security_group_ids) > 0
    error_message = "security_group_ids must name at least one security group."
  }
}

variable "assign_public_ip" {
  type        = bool
  description = "Give each task a public IP. Only for public subnets without a NAT gateway; leave false."
  default     = false
}

variable "environment_variables" {
  type        = map(string)
  description = "Extra environment variables for the container. They are stored in plain text in the task definition: never put secrets here."
  default     = {}
}

variable "bucket_arn" {
  type        = string
  description = "ARN of an S3 bucket the task may read and write objects in (exported as BUCKET_NAME); empty grants none. Must be known at plan time."
  default     = ""

  validation {
    condition     = var.bucket_arn == "" || can(regex("^arn:aws[a-z-]*:s3:::[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_arn))
    error_message = "bucket_arn must be empty or an S3 bucket ARN (arn:aws:s3:::NAME)."
  }
}

variable "table_arn" {
  type        = string
  description = "ARN of a DynamoDB table the task may read and write items in (exported as TABLE_NAME); empty grants none. Must be known at plan time."
  default     = ""

  validation {
    condition     = var.table_arn == "" || can(regex("^arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:[0-9]{12}:table/[a-zA-Z0-9_.-]{3,255}$", var.table_arn))
    error_message = "table_arn must be empty or a DynamoDB table ARN (arn:aws:dynamodb:REGION:ACCOUNT:table/NAME)."
  }
}

variable "kms_key_arn" {
  type        = string
  description = "ARN of the customer-managed KMS key that encrypts the service's logs; the task may also use it through S3 and DynamoDB for the granted bucket and table. Its key policy must allow the CloudWatch Logs service."
  default     = ""

  validation {
    condition     = var.kms_key_arn == "" || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be empty or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID); aliases cannot be used in IAM grants."
  }
}

variable "log_retention_days" {
  type        = number
  description = "Days CloudWatch Logs keeps the container logs."
  default     = 90

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be a retention period CloudWatch Logs supports (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, ... 3653)."
  }
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every taggable resource of the module, and propagated to the tasks."
  default     = {}
}
