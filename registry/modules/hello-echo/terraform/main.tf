terraform {
  required_version = ">= 1.5.0"
}

variable "text" {
  type        = string
  description = "The text to echo."
}

variable "repeat" {
  type        = number
  description = "How many times to repeat the text."
  default     = 1
}

resource "terraform_data" "echo" {
  input = join(" ", [for i in range(var.repeat) : var.text])
}

output "echoed" {
  description = "The text, repeated."
  value       = terraform_data.echo.output
}
