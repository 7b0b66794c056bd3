output "service_name" {
  description = "Name of the ECS service."
  value       = aws_ecs_service.this.name
}

output "service_arn" {
  description = "ARN of the ECS service."
  # In provider 5.x the service's id is its ARN.
  value = aws_ecs_service.this.id
}

output "task_role_arn" {
  description = "ARN of the task's IAM role, for granting it further access."
  value       = aws_iam_role.task.arn
}
