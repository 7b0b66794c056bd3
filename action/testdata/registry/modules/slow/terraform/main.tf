variable "started" {
  type = string
}

variable "finished" {
  type = string
}

variable "seconds" {
  type = number
}

resource "terraform_data" "slow" {
  input = var.seconds

  provisioner "local-exec" {
    command = "echo started > ${var.started}; sleep ${var.seconds}; touch ${var.finished}"
  }
}
