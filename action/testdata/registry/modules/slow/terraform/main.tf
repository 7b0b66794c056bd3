variable "seconds" {
  type = number
}

resource "terraform_data" "slow" {
  input = var.seconds

  provisioner "local-exec" {
    command = "sleep ${var.seconds}"
  }
}
