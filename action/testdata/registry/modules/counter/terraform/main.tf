variable "log" {
  type = string
}

variable "revision" {
  type = string
}

resource "terraform_data" "counter" {
  input = var.revision

  provisioner "local-exec" {
    command = "echo applied ${var.revision} >> '${var.log}'"
  }
}
