variable "table_name" {
  type        = string
  description = "Name of the table, unique in the account and region."

  validation {
    condition     = can(regex("^[a-zA-Z0-9_.-]{3,255}$", var.table_name))
    error_message = "table_name must be 3-255 letters, digits, underscores, dots or hyphens."
  }
}

variable "hash_key" {
  type        = string
  description = "Attribute name of the partition key."
}

variable "hash_key_type" {
  type        = string
  description = "Type of the partition key: S (string), N (number) or B (binary)."
  default     = "S"

  validation {
    condition     = contains(["S", "N", "B"], var.hash_key_type)
    error_message = "hash_key_type must be S, N or B."
  }
}

variable "range_key" {
  type        = string
  description = "Attribute name of the sort key; empty for a table with a partition key only."
  default     = ""
}

variable "range_key_type" {
  type        = string
  description = "Type of the sort key: S (string), N (number) or B (binary)."
  default     = "S"

  validation {
    condition     = contains(["S", "N", "B"], var.range_key_type)
    error_message = "range_key_type must be S, N or B."
  }
}

variable "billing_mode" {
  type        = string
  description = "PAY_PER_REQUEST (on demand) or PROVISIONED."
  default     = "PAY_PER_REQUEST"

  validation {
    condition     = contains(["PAY_PER_REQUEST", "PROVISIONED"], var.billing_mode)
    error_message = "billing_mode must be PAY_PER_REQUEST or PROVISIONED."
  }
}

variable "read_capacity" {
  type        = number
  description = "Provisioned read capacity units; used only with billing_mode PROVISIONED."
  default     = 5
}

variable "write_capacity" {
  type        = number
  description = "Provisioned write capacity units; used only with billing_mode PROVISIONED."
  default     = 5
}

variable "ttl_attribute" {
  type        = string
  description = "Attribute holding each item's expiry time (epoch seconds); empty disables TTL."
  default     = ""
}

variable "kms_key_arn" {
  type        = string
  description = "ARN of the customer-managed KMS key that encrypts the table. Empty uses the AWS-managed key aws/dynamodb, which does not satisfy encryptionAtRest."
  default     = ""

  validation {
    condition     = var.kms_key_arn == "" || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be empty or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID); aliases cannot be used in IAM grants."
  }
}

variable "point_in_time_recovery" {
  type        = bool
  description = "Keep continuous backups, restorable to any second of the last 35 days."
  default     = true
}

variable "deletion_protection_enabled" {
  type        = bool
  description = "Refuse to delete the table until protection is turned off."
  default     = true
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every taggable resource of the module."
  default     = {}
}
