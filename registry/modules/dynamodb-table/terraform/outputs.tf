output "table_arn" {
  description = "ARN of the table, known at plan time."
  value       = local.table_arn
}

output "table_name" {
  description = "Name of the table."
  value       = aws_dynamodb_table.this.name
}
