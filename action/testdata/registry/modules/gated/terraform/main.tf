variable "started" {
  type = string
}

variable "proceed" {
  type = string
}

variable "log" {
  type = string
}

resource "terraform_data" "gated" {
  input = var.log

  provisioner "local-exec" {
    command = "echo started > '${var.started}' && read line < '${var.proceed}' && echo applied >> '${var.log}'"
  }
}
