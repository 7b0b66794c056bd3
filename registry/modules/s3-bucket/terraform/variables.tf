variable "bucket_name" {
  type        = string
  description = "Globally unique bucket name."

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.bucket_name))
    error_message = "bucket_name must be 3-63 lowercase letters, digits, dots or hyphens, starting and ending with a letter or digit."
  }
}

variable "kms_key_arn" {
  type        = string
  description = "ARN of the customer-managed KMS key that encrypts objects (SSE-KMS with an S3 bucket key). Empty falls back to SSE-S3 (AES256), which does not satisfy encryptionAtRest."
  default     = ""

  validation {
    condition     = var.kms_key_arn == "" || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be empty or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID); aliases cannot be used in IAM grants."
  }
}

variable "versioning" {
  type        = bool
  description = "Keep every version of every object, so overwritten or deleted objects can be restored."
  default     = true
}

variable "noncurrent_version_expiration_days" {
  type        = number
  description = "Days after which noncurrent object versions are deleted; 0 keeps them forever. Only applies with versioning."
  default     = 90

  validation {
    condition     = var.noncurrent_version_expiration_days >= 0 && floor(var.noncurrent_version_expiration_days) == var.noncurrent_version_expiration_days
    error_message = "noncurrent_version_expiration_days must be a whole number of days, 0 or more."
  }
}

variable "force_destroy" {
  type        = bool
  description = "Allow Terraform to delete the bucket while it still holds objects. Leave false outside throwaway environments."
  default     = false
}

variable "tags" {
  type        = map(string)
  description = "Tags applied to every taggable resource of the module."
  default     = {}
}
