terraform {
  required_version = ">= 1.5.0"
}

variable "greeting" {
  type        = string
  description = "The salutation."
  default     = "Hello"
}

variable "audience" {
  type        = string
  description = "Who is greeted."
}

variable "tags" {
  type        = map(string)
  description = "Tags recorded with the message."
  default     = {}
}

resource "terraform_data" "message" {
  input = {
    text = "${var.greeting}, ${var.audience}!"
    tags = var.tags
  }
}

output "text" {
  description = "The composed greeting."
  value       = terraform_data.message.output.text
}

output "id" {
  description = "The terraform_data resource id."
  value       = terraform_data.message.id
}
