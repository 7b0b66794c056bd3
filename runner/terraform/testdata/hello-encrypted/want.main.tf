# Rendered by Nova for stack hello@1.0.0. Do not edit: Nova
# re-renders this file on every plan, from the contract and the registry.

terraform {
  required_version = ">= 1.5.0"

  backend "local" {}

  # OpenTofu encrypts the state and saved plans (backend.encryption). Nova
  # gives tofu the key provider, with its passphrase, in TF_ENCRYPTION at
  # run time: it is never written here.
  encryption {
    method "aes_gcm" "nova" {
      keys = key_provider.pbkdf2.nova
    }
    state {
      method   = method.aes_gcm.nova
      enforced = true
    }
    plan {
      method   = method.aes_gcm.nova
      enforced = true
    }
  }
}

module "message" {
  source   = "./modules/hello-message-1.0.0"
  audience = "Nova"
  enabled  = true
  names    = []
  replicas = 2
  tags = {
    "nova:environment" = "dev"
  }
}

module "echo" {
  source = "./modules/hello-echo-1.0.0"
  text   = module.message.text
}

output "message__text" {
  value = module.message.text
}

output "message__secret" {
  value     = module.message.secret
  sensitive = true
}

output "echo__echoed" {
  value = module.echo.echoed
}
